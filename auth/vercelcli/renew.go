package vercelcli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
)

// DefaultIssuerURL is where the OAuth discovery document of Vercel is
// served, at /.well-known/openid-configuration.
const DefaultIssuerURL = "https://vercel.com"

// cliClientID is the public OAuth client ID of the Vercel CLI.
const cliClientID = "cl_HYyOPBNtFMfHhaUn9L4QPfTZz6TP47bp"

// renewCLILogin exchanges the CLI's refresh token for a new access token and
// saves both into auth.json. On any failure auth.json is left as it was.
func (r *LinkedProjectRefresher) renewCLILogin(ctx context.Context, a cliAuth, path string, now time.Time) (string, error) {
	fail := func(err error) (string, error) {
		return "", &errmsg.Error{Msg: "Failed to refresh authentication token", Sentinel: ErrCLILoginRequired, Cause: err}
	}
	endpoint, err := r.tokenEndpoint(ctx)
	if err != nil {
		return fail(err)
	}
	form := url.Values{
		"client_id":     {cliClientID},
		"grant_type":    {"refresh_token"},
		"refresh_token": {a.RefreshToken},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	body, status, err := r.do(req)
	if err != nil {
		return fail(err)
	}
	if status < 200 || status > 299 {
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
	body, status, err := r.do(req)
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
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
	return doc.TokenEndpoint, nil
}

func (r *LinkedProjectRefresher) do(req *http.Request) ([]byte, int, error) {
	client := r.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
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
