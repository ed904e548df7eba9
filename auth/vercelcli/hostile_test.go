package vercelcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Secrets of the hostile tests, opaque (not token-shaped), so that only
// knowing them hides them.
const (
	hostileCLIToken   = "cli_access_canary_4f1d2c"
	hostileRefresh    = "cli_refresh_canary_9a8b7c"
	hostileNewAccess  = "cli_new_access_canary_5e6f"
	hostileStatusLine = "HTTP/1.1 403 "
)

// echoAll writes every secret the server may know: what the request
// carried (Authorization, form), and the tokens of the test.
func echoAll(r *http.Request, known ...string) string {
	_ = r.ParseForm()
	parts := append([]string{r.Header.Get("Authorization"), r.PostForm.Get("refresh_token")}, known...)
	return strings.Join(parts, " | ")
}

// hijackStatus answers with a status line whose reason phrase is text.
func hijackStatus(w http.ResponseWriter, text string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString(hostileStatusLine + text + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	_ = buf.Flush()
}

// TestHostileMintAndRefreshNeverLeak runs the linked-project refresh
// against mint and OAuth servers that echo every secret they know (the
// CLI token, the refresh token, the renewed access token, the expired
// OIDC token, a minted token) in each place the client reads: a JSON
// message, a reason phrase, a malformed status line. None of them appears
// in the provider's error, its %+v form, or what OnRefreshError gets.
func TestHostileMintAndRefreshNeverLeak(t *testing.T) {
	t.Parallel()
	expiredOIDC := tok("team", "prj", t0.Add(-time.Minute))
	minted := tok("team", "prj", t0.Add(time.Hour))
	// What the client knows, which a server may know too. hostileNewAccess
	// is known once a renewal gave it.
	secrets := []string{hostileCLIToken, hostileRefresh, expiredOIDC, minted}
	echoJSON := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			msg := echoAll(r, secrets...)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": msg, "message": msg}})
		}
	}
	// OAuth token endpoints answer {"error": "..."}.
	echoOAuth := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": echoAll(r, secrets...)})
	}
	renewed := func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, hostileNewAccess)
	}
	cases := []struct {
		name  string
		mint  http.HandlerFunc
		renew http.HandlerFunc // nil: the CLI login is valid, nothing is renewed
	}{
		{"mint 403 JSON", echoJSON(http.StatusForbidden), nil},
		{"mint 500 JSON", echoJSON(http.StatusInternalServerError), nil},
		{"mint reason phrase", func(w http.ResponseWriter, r *http.Request) { hijackStatus(w, echoAll(r, secrets...)) }, nil},
		{"mint malformed status", func(w http.ResponseWriter, r *http.Request) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_, _ = buf.WriteString("HTTP/1.1 " + strings.ReplaceAll(echoAll(r, secrets...), " ", "") + " OK\r\n\r\n")
				_ = buf.Flush()
				conn.Close()
			}
		}, nil},
		{"mint after a renewal", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"` + echoAll(r, append(secrets, hostileNewAccess)...) + `"}}`))
		}, renewed},
		{"token endpoint error", echoJSON(http.StatusForbidden), echoOAuth},
		{"token endpoint reason phrase", echoJSON(http.StatusForbidden), func(w http.ResponseWriter, r *http.Request) {
			hijackStatus(w, echoAll(r, secrets...))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.env.Set(auth.EnvOIDCToken, expiredOIDC)
			f.srv.Respond(tc.mint)
			r := f.refresher()
			if tc.renew == nil {
				f.writeCLIAuth(fmt.Sprintf(`{"token":%q,"refreshToken":%q}`, hostileCLIToken, hostileRefresh))
			} else {
				f.writeCLIAuth(fmt.Sprintf(`{"token":%q,"refreshToken":%q,"expiresAt":%d}`, hostileCLIToken, hostileRefresh, t0.Add(-time.Hour).Unix()))
				o := newOAuthServer(t)
				o.token = tc.renew
				r.RenewCLILogin, r.IssuerURL = true, o.URL
			}
			var reported []string
			p := auth.NewOIDCProvider(auth.OIDCOptions{
				Source:    func(context.Context) (string, bool, error) { return expiredOIDC, true, nil },
				Refresher: r, Clock: f.clock,
				OnRefreshError: func(err error) { reported = append(reported, err.Error(), fmt.Sprintf("%+v", err)) },
			})
			_, err := p.Credentials(t.Context())
			require.Error(t, err)
			texts := append([]string{err.Error(), fmt.Sprintf("%+v", err)}, reported...)
			for _, s := range append(secrets, hostileNewAccess) {
				for _, text := range texts {
					assert.NotContains(t, text, s)
				}
			}
		})
	}
}

// TestHostileMintAnswerIsBounded serves a 100 MiB mint answer: the
// refresh fails with a *ResponseTooLargeError naming the call, having
// allocated far less than the answer.
func TestHostileMintAnswerIsBounded(t *testing.T) {
	f := newFixture(t)
	f.writeCLIAuth(`{"token":"` + hostileCLIToken + `"}`)
	chunk := bytes.Repeat([]byte("0"), 64<<10)
	f.srv.Respond(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"token":"`))
		for range 100 << 20 / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := f.refresher().Refresh(t.Context(), auth.Target{ProjectID: "prj", TeamID: "team"})
	runtime.ReadMemStats(&after)
	var tl *apierr.ResponseTooLargeError
	require.ErrorAs(t, err, &tl)
	assert.ErrorIs(t, err, apierr.ErrResponseTooLarge)
	assert.Contains(t, err.Error(), "mint OIDC token")
	assert.EqualValues(t, DefaultMaxResponseSize, tl.Limit)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20))
}

// TestRefresherRefusesPlainHTTP never sends a token in clear text: the
// API base URL, the issuer and a discovered token endpoint must be https
// or loopback; *.localhost is not.
func TestRefresherRefusesPlainHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ api, issuer, tokenEndpoint, field string }{
		{api: "http://api.vercel.com", field: "APIBaseURL"},
		{api: "http://api.localhost:1", field: "APIBaseURL"},
		{issuer: "http://vercel.example.com", field: "IssuerURL"},
		{tokenEndpoint: "http://login.example.com/token", field: "token_endpoint"},
	} {
		t.Run(tc.field+" "+tc.api+tc.issuer+tc.tokenEndpoint, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			r := f.refresher()
			if tc.api != "" {
				f.writeCLIAuth(`{"token":"` + hostileCLIToken + `"}`)
				r.APIBaseURL = tc.api
			} else {
				f.writeCLIAuth(fmt.Sprintf(`{"token":%q,"refreshToken":%q,"expiresAt":%d}`, hostileCLIToken, hostileRefresh, t0.Add(-time.Hour).Unix()))
				o := newOAuthServer(t)
				o.token = func(w http.ResponseWriter, _ *http.Request) { t.Error("the refresh token was sent") }
				if tc.tokenEndpoint != "" {
					o.discovery = func(w http.ResponseWriter, _ string) {
						_ = json.NewEncoder(w).Encode(map[string]string{"token_endpoint": tc.tokenEndpoint})
					}
				}
				r.RenewCLILogin, r.IssuerURL = true, cmpOr(tc.issuer, o.URL)
			}
			_, err := r.Refresh(t.Context(), auth.Target{ProjectID: "prj", TeamID: "team"})
			var ie *apierr.InsecureURLError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tc.field, ie.Field)
			assert.Zero(t, f.srv.Hits(), "nothing was sent to the mint endpoint")
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
