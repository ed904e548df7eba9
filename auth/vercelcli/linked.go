package vercelcli

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// DefaultAPIBaseURL is the base URL of the Vercel REST API, where OIDC tokens
// are minted.
const DefaultAPIBaseURL = "https://api.vercel.com"

// LinkedProjectRefresher mints OIDC tokens on a developer machine, as the
// TypeScript SDK does when VERCEL_OIDC_TOKEN is missing or expiring.
//
// The target project and team are, in order: the ProjectID and TeamID fields,
// the IDs passed to Refresh (the current token's claims), and
// .vercel/project.json (projectId, orgId) of the first directory at or above
// the working directory that contains a .vercel entry.
// Whatever their origin, they must match ^[A-Za-z0-9][A-Za-z0-9._-]*$ (else
// ErrInvalidID, before any file is read or request sent).
//
// A token cached in <user data dir>/com.vercel.token/<project>.json that is
// valid for at least Buffer more is used as is. Otherwise the Vercel CLI's
// login is read from auth.json (see ConfigDirs) and sent as the bearer token
// of POST {APIBaseURL}/v1/projects/{project}/token?source=vercel-oidc-refresh&teamId={team}.
// The new token is written to the cache (file mode 0600, atomically).
//
// When the CLI keeps its login in the OS keyring (VERCEL_TOKEN_STORAGE or
// config.json credStorage is "keyring", or "auto" with no token in auth.json)
// or uses DPoP (__VERCEL_FF_DPOP=1), the token is obtained from the vercel
// command instead, through CLI.
//
// By default the CLI's auth.json is only read, never written: an expired CLI
// login gives an error matching ErrCLILoginRequired, and running any vercel
// command renews it. With RenewCLILogin set, an expired login that has a
// refresh token is renewed through OAuth (token endpoint found at IssuerURL)
// and saved back into auth.json atomically, keeping its other fields and the
// old refresh token when no new one is returned. auth.json is never emptied,
// and is left unchanged when the renewal fails.
//
// LinkedProjectRefresher implements Invalidator: a token the API rejected is
// not taken from the cache again. Use it through a pointer; it must not be
// copied after first use.
type LinkedProjectRefresher struct {
	ProjectID  string            // explicit project ID or name; overrides the rest
	TeamID     string            // explicit team ID or slug; overrides the rest
	APIBaseURL string            // default DefaultAPIBaseURL; plain http only to 127.0.0.0/8, ::1 or localhost
	HTTPClient *http.Client      // default http.DefaultClient; redirects are never followed
	Buffer     time.Duration     // validity required of cached and CLI tokens; 0: auth.DefaultRefreshBuffer, negative: none
	CLI        *CLIExecRefresher // used for keyring and DPoP logins; nil: the default one

	// RenewCLILogin lets an expired CLI login be renewed with its refresh
	// token, which rewrites the CLI's auth.json. Off by default.
	RenewCLILogin bool
	IssuerURL     string // OAuth issuer for RenewCLILogin; default DefaultIssuerURL

	// MaxResponseSize bounds, in bytes, an answer of the mint, discovery
	// and token endpoints; a longer one fails the refresh with an error
	// matching sandbox.ErrResponseTooLarge. 0: DefaultMaxResponseSize.
	MaxResponseSize int64

	sys host.System // environment, files, working directory, clock; zero: the real ones

	mu       sync.Mutex
	rejected [sha256.Size]byte // hash of the last token the API rejected
}

// Refresh returns a valid OIDC token for the target project.
func (r *LinkedProjectRefresher) Refresh(ctx context.Context, t auth.Target) (string, error) {
	sys := r.sys
	project, team, err := resolveTarget(sys, r.ProjectID, r.TeamID, t.ProjectID, t.TeamID)
	if err != nil {
		return "", err
	}
	now := sys.Now()
	buffer := r.Buffer
	switch {
	case buffer == 0:
		buffer = auth.DefaultRefreshBuffer
	case buffer < 0:
		buffer = 0
	}

	cachePath := r.cachePath(project)
	if tok, ok := r.cached(cachePath, now, buffer); ok {
		return tok, nil
	}
	tok, err := r.obtain(ctx, project, team, now, buffer)
	if err != nil {
		return "", err
	}
	if _, err := auth.ParseClaims(tok); err != nil {
		return "", err
	}
	if cachePath != "" {
		// The cache only saves a request next time; failing to write it is
		// not worth failing the refresh for.
		_ = r.writeCache(cachePath, tok)
	}
	return tok, nil
}

// Linked returns nil when there is a project to mint tokens for: set in
// ProjectID, or linked by a .vercel entry at or above the working
// directory. Otherwise its error matches ErrProjectNotLinked. auth.Default
// asks it before using the refresher as its last tier.
func (r *LinkedProjectRefresher) Linked() error {
	if r.ProjectID != "" {
		return nil
	}
	_, err := findProjectRoot(r.sys)
	return err
}

// Invalidate stops the refresher from serving staleToken from its cache.
func (r *LinkedProjectRefresher) Invalidate(staleToken string) {
	r.mu.Lock()
	r.rejected = sha256.Sum256([]byte(staleToken))
	r.mu.Unlock()
}

func (r *LinkedProjectRefresher) isRejected(tok string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rejected == sha256.Sum256([]byte(tok))
}

// cachePath is the cache file of project, "" when there is none.
func (r *LinkedProjectRefresher) cachePath(project string) string {
	dir := userDataDir(r.sys)
	if dir == "" || !validID(project) {
		return ""
	}
	return filepath.Join(dir, "com.vercel.token", project+".json")
}

type cachedToken struct {
	Token string `json:"token"`
}

func (r *LinkedProjectRefresher) cached(path string, now time.Time, buffer time.Duration) (string, bool) {
	if path == "" {
		return "", false
	}
	data, err := r.sys.Files().ReadFile(path)
	if err != nil {
		return "", false
	}
	var c cachedToken
	if json.Unmarshal(data, &c) != nil || c.Token == "" {
		return "", false
	}
	claims, err := auth.ParseClaims(c.Token)
	if err != nil || (!claims.Expiry.IsZero() && claims.Expiry.Before(now.Add(buffer))) {
		return "", false
	}
	if r.isRejected(c.Token) {
		return "", false
	}
	return c.Token, true
}

func (r *LinkedProjectRefresher) writeCache(path, tok string) error {
	data, err := json.Marshal(cachedToken{Token: tok})
	if err != nil {
		return err
	}
	return writeFileAtomic(r.sys.Files(), path, data)
}

// writeFileAtomic writes data to a temporary file next to path (mode 0600)
// and renames it over path.
func writeFileAtomic(fsys host.FS, path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+"."+rand.Text()+".tmp")
	if err := fsys.WriteFile(tmp, data, 0o600); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		_ = fsys.Remove(tmp)
		return err
	}
	return nil
}

func (r *LinkedProjectRefresher) cli() *CLIExecRefresher {
	if r.CLI != nil {
		return r.CLI
	}
	return &CLIExecRefresher{sys: r.sys}
}

// obtain gets a new token from the CLI or from the mint endpoint.
func (r *LinkedProjectRefresher) obtain(ctx context.Context, project, team string, now time.Time, buffer time.Duration) (string, error) {
	sys := r.sys
	dir := cliConfigDir(sys)
	if dir == "" {
		return "", &errmsg.Error{Msg: "cannot locate the Vercel CLI configuration directory", Sentinel: ErrCLILoginRequired}
	}
	storage := credStorage(sys, dir)
	if sys.Env("__VERCEL_FF_DPOP") == "1" || storage == "keyring" {
		return r.cli().run(ctx, project, team)
	}
	a, path, err := readCLIAuth(sys, dir)
	if err != nil {
		return "", err
	}
	if a.Token == "" && storage == "auto" {
		return r.cli().run(ctx, project, team)
	}
	userToken, err := cliToken(a, path, now, buffer)
	if err != nil && r.RenewCLILogin && a.RefreshToken != "" {
		userToken, err = r.renewCLILogin(ctx, a, path, now)
	}
	if err != nil {
		return "", err
	}
	// What the CLI keeps is secret too: a server may echo any of it.
	return r.mint(ctx, project, team, userToken, redact.NewSet(userToken, a.Token, a.RefreshToken))
}

// mint asks the API for a new project OIDC token. hide finds the secrets
// to keep out of its errors.
func (r *LinkedProjectRefresher) mint(ctx context.Context, project, team, userToken string, hide *redact.Set) (string, error) {
	fail := func(err error) (string, error) {
		return "", &errmsg.Error{Msg: "Failed to refresh OIDC token", Cause: redact.Error(err, hide)}
	}
	base := strings.TrimRight(cmp.Or(r.APIBaseURL, DefaultAPIBaseURL), "/")
	q := url.Values{"source": {"vercel-oidc-refresh"}}
	if team != "" {
		q.Set("teamId", team)
	}
	u := base + "/v1/projects/" + url.PathEscape(project) + "/token?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Authorization", "Bearer "+userToken)
	req.Header.Set("Accept", "application/json")
	body, resp, err := r.do(req, endpoint{"APIBaseURL", "mint OIDC token", "/v1/projects/{project}/token"})
	if err != nil {
		return fail(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", mintStatusError(resp, body, hide)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", errors.New("malformed Vercel OIDC token response: not JSON")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", errors.New("malformed Vercel OIDC token response: expected an object")
	}
	tok, ok := obj["token"].(string)
	if !ok || tok == "" {
		return "", errors.New("malformed Vercel OIDC token response: expected a string-valued token property")
	}
	return tok, nil
}

// mintStatusError describes a refused mint with the server's status line
// and message, with the secrets hide finds (the user token the request
// carried, any token shape) kept out.
func mintStatusError(resp *http.Response, body []byte, hide *redact.Set) error {
	status := resp.Status
	if status == "" {
		status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	msg := "Failed to refresh OIDC token: " + status
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg += ": " + e.Error.Message
	}
	return &errmsg.Error{Msg: hide.String(msg)}
}
