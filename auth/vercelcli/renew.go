package vercelcli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/loopback"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// DefaultIssuerURL is where the OAuth discovery document of Vercel is
// served, at /.well-known/openid-configuration.
const DefaultIssuerURL = "https://vercel.com"

// cliClientID is the public OAuth client ID of the Vercel CLI.
const cliClientID = "cl_HYyOPBNtFMfHhaUn9L4QPfTZz6TP47bp"

// renewCLILogin exchanges the CLI's refresh token for a new access token and
// saves both into auth.json. On any failure auth.json is left as it was.
func (r *LinkedProjectRefresher) renewCLILogin(ctx context.Context, a cliAuth, path string, now time.Time) (string, error) {
	hide := redact.NewSet(a.RefreshToken, a.Token)
	fail := func(err error) (string, error) {
		return "", &errmsg.Error{Msg: "Failed to refresh authentication token", Sentinel: ErrCLILoginRequired, Cause: redact.Error(err, hide)}
	}
	tokenURL, err := r.tokenEndpoint(ctx)
	if err != nil {
		return fail(err)
	}
	form := url.Values{
		"client_id":     {cliClientID},
		"grant_type":    {"refresh_token"},
		"refresh_token": {a.RefreshToken},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	body, resp, err := r.do(req, endpoint{"token_endpoint", "renew CLI login", "token_endpoint"})
	if err != nil {
		return fail(err)
	}
	if status := resp.StatusCode; status < 200 || status > 299 {
		var oe struct {
			Error string `json:"error"`
		}
		msg := "token endpoint answered " + strconv.Itoa(status) + " " + http.StatusText(status)
		if json.Unmarshal(body, &oe) == nil && oe.Error != "" {
			msg += " (" + oe.Error + ")"
		}
		return fail(errors.New(msg))
	}
	var tr struct {
		AccessToken  string   `json:"access_token"`
		TokenType    string   `json:"token_type"`
		ExpiresIn    *float64 `json:"expires_in"`
		RefreshToken string   `json:"refresh_token"`
	}
	if json.Unmarshal(body, &tr) != nil || tr.AccessToken == "" ||
		!strings.EqualFold(tr.TokenType, "Bearer") || tr.ExpiresIn == nil {
		return fail(errors.New("malformed token endpoint response"))
	}
	refresh := tr.RefreshToken
	if refresh == "" {
		refresh = a.RefreshToken // keep the old one when none is returned
	}
	expiresAt := now.Unix() + int64(*tr.ExpiresIn)
	if err := r.saveCLILogin(path, tr.AccessToken, refresh, expiresAt); err != nil {
		return fail(err)
	}
	return tr.AccessToken, nil
}

// tokenEndpoint reads token_endpoint from the discovery document.
func (r *LinkedProjectRefresher) tokenEndpoint(ctx context.Context) (string, error) {
	issuer := strings.TrimRight(cmp.Or(r.IssuerURL, DefaultIssuerURL), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	body, resp, err := r.do(req, endpoint{"IssuerURL", "OAuth discovery", "/.well-known/openid-configuration"})
	if err != nil {
		return "", err
	}
	if status := resp.StatusCode; status != http.StatusOK {
		return "", errors.New("OAuth discovery answered " + strconv.Itoa(status) + " " + http.StatusText(status))
	}
	var doc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return "", errors.New("malformed OAuth discovery document")
	}
	u, err := url.Parse(doc.TokenEndpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("OAuth discovery document has no usable token_endpoint")
	}
	if err := loopback.Check("token_endpoint", u); err != nil {
		return "", err
	}
	return doc.TokenEndpoint, nil
}

// DefaultMaxResponseSize is the default of
// LinkedProjectRefresher.MaxResponseSize: the answers it reads are a few
// hundred bytes.
const DefaultMaxResponseSize = 1 << 20

// endpoint names what a request of the refresher is for, in its errors.
type endpoint struct {
	field string // the setting that gave its URL
	op    string // what it does
	path  string // its path template
}

// do sends req, which must go by https or to the local machine (see
// internal/loopback), without following redirects, and reads its answer
// whole, up to MaxResponseSize. resp's body is closed.
func (r *LinkedProjectRefresher) do(req *http.Request, e endpoint) ([]byte, *http.Response, error) {
	if err := loopback.Check(e.field, req.URL); err != nil {
		return nil, nil, err
	}
	client := http.Client{Transport: http.DefaultTransport}
	if r.HTTPClient != nil {
		client = *r.HTTPClient
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if loopback.NeedsDialer(req.URL) {
		t, err := loopback.Transport(e.field, req.URL, client.Transport)
		if err != nil {
			return nil, nil, err
		}
		t.DisableKeepAlives = true // a clone per request: keep no idle connection behind
		client.Transport = t
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := httpcore.ReadAnswer(resp, cmp.Or(r.MaxResponseSize, DefaultMaxResponseSize), e.op, e.path)
	return body, resp, err
}

// saveCLILogin rewrites auth.json with the new login, keeping every other
// field, atomically and with mode 0600.
func (r *LinkedProjectRefresher) saveCLILogin(path, token, refresh string, expiresAt int64) error {
	fsys := r.sys.Files()
	fields := map[string]json.RawMessage{}
	if data, err := fsys.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &fields); err != nil {
			return errors.New("cannot parse " + path)
		}
	}
	set := func(k string, v any) {
		b, _ := json.Marshal(v)
		fields[k] = b
	}
	set("token", token)
	set("refreshToken", refresh)
	set("expiresAt", expiresAt)
	data, err := json.MarshalIndent(fields, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(fsys, path, append(data, '\n'))
}
