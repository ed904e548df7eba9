package auth

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fake clock's start: a whole second, so JWT exp values (seconds)
// line up exactly with it.
var t0 = time.Unix(1_700_000_000, 0)

// testEnv is a fake environment that counts reads.
type testEnv struct {
	mu    sync.Mutex
	vars  map[string]string
	reads map[string]int
}

func newTestEnv(kv ...string) *testEnv {
	e := &testEnv{vars: map[string]string{}, reads: map[string]int{}}
	for i := 0; i+1 < len(kv); i += 2 {
		e.vars[kv[i]] = kv[i+1]
	}
	return e
}

func (e *testEnv) Lookup(k string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reads[k]++
	v, ok := e.vars[k]
	return v, ok
}

func (e *testEnv) Set(k, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vars[k] = v
}

func (e *testEnv) Reads(k string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reads[k]
}

type mintRequest = authtest.MintRequest

var tokenResponse = authtest.TokenResponse

// fixture is a sandboxed machine: a working directory, a fake env and
// clock, a mint server, and a refresher that mints through it for the
// project the test links.
type fixture struct {
	t     *testing.T
	root  string
	cwd   string
	env   *testEnv
	clock *authtest.Clock
	srv   *authtest.MintServer

	mu            sync.Mutex
	project, team string // linked; "" when not
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		t:     t,
		root:  root,
		cwd:   filepath.Join(root, "work"),
		clock: authtest.NewClock(t0),
		srv:   authtest.NewMintServer(t),
		env:   newTestEnv(),
	}
	require.NoError(t, os.MkdirAll(f.cwd, 0o755))
	return f
}

func (f *fixture) system() host.System {
	return host.System{
		LookupEnv: f.env.Lookup,
		Getwd:     func() (string, error) { return f.cwd, nil },
		FS:        host.OSFS{},
		Clock:     f.clock,
	}
}

// link makes project (of team) the linked project.
func (f *fixture) link(project, team string) {
	f.mu.Lock()
	f.project, f.team = project, team
	f.mu.Unlock()
}

func (f *fixture) write(path, content string) {
	f.t.Helper()
	require.NoError(f.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(f.t, os.WriteFile(path, []byte(content), 0o600))
}

func (f *fixture) lastRequest() mintRequest {
	f.t.Helper()
	r, ok := f.srv.LastRequest()
	require.True(f.t, ok, "no mint request")
	return r
}

var errNotLinked = errors.New("unable to find project root directory")

// mintRefresher mints through the fixture's mint server as a CLI login
// with the token cli_token would.
type mintRefresher struct{ f *fixture }

func (f *fixture) refresher() LinkedRefresher { return mintRefresher{f} }

func (r mintRefresher) Linked() error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if r.f.project == "" {
		return errNotLinked
	}
	return nil
}

func (r mintRefresher) Refresh(ctx context.Context, t Target) (string, error) {
	r.f.mu.Lock()
	project, team := cmp.Or(t.ProjectID, r.f.project), cmp.Or(t.TeamID, r.f.team)
	r.f.mu.Unlock()
	if project == "" {
		return "", errNotLinked
	}
	q := url.Values{"source": {"vercel-oidc-refresh"}}
	if team != "" {
		q.Set("teamId", team)
	}
	u := r.f.srv.URL + "/v1/projects/" + url.PathEscape(project) + "/token?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer cli_token")
	resp, err := r.f.srv.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode/100 != 2 {
		return "", errors.New("failed to refresh OIDC token: " + resp.Status)
	}
	var v struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(body, &v) != nil || v.Token == "" {
		return "", errors.New("malformed Vercel OIDC token response")
	}
	return v.Token, nil
}

// defaults builds a Default provider wired to the fixture, minting through
// its server unless opts has a Refresher.
func (f *fixture) defaults(opts DefaultOptions) Provider {
	opts.sys = f.system()
	if opts.Refresher == nil {
		opts.Refresher = f.refresher()
	}
	return Default(opts)
}

// oidc builds an OIDCProvider reading VERCEL_OIDC_TOKEN from the fixture's
// env and refreshing through the fixture's mint server.
func (f *fixture) oidc(opts OIDCOptions) *OIDCProvider {
	opts.Source = fromEnv(EnvOIDCToken, f.system())
	if opts.Refresher == nil {
		opts.Refresher = f.refresher()
	}
	opts.Clock = f.clock
	opts.sys = f.system()
	return NewOIDCProvider(opts)
}

func tok(team, project string, exp time.Time) string { return authtest.Token(team, project, exp) }

func mkJWT(claims map[string]any) string { return authtest.MakeJWT(claims) }

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
