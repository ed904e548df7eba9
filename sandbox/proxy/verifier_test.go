package proxy_test

import (
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

func TestValidTokenReachesHandlerWithoutForwardedHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := forwarded(e.token(e.claims()))
	r.Header.Set("X-Request-Id", "req_1")
	status, got, err := e.serve(r)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.NotNil(t, got)

	f, ok := proxy.FromContext(got.Context())
	require.True(t, ok, "the handler finds the sandbox in the context")
	assert.Equal(t, "team_1", f.TeamID)
	assert.Equal(t, "prj_1", f.ProjectID)
	assert.Equal(t, "sbx_1", f.SandboxID)
	assert.Equal(t, "agent", f.SandboxName)
	assert.Equal(t, "https://api.example.com/v1/charges?live=1", f.URL.String(), "the destination, default port dropped")

	for _, h := range []string{"Vercel-Forwarded-Host", "Vercel-Forwarded-Scheme", "Vercel-Forwarded-Port", "Vercel-Forwarded-Path", "Vercel-Sandbox-Oidc-Token"} {
		assert.Empty(t, got.Header.Values(h), "the handler never sees %s", h)
		assert.NotEmpty(t, r.Header.Get(h), "the caller's request is not changed")
	}
	assert.Equal(t, "req_1", got.Header.Get("X-Request-Id"), "other headers pass")
	assert.Equal(t, "application/json", got.Header.Get("Content-Type"))
	assert.Equal(t, http.MethodPost, got.Method)
	assert.Equal(t, 1, e.keys.count(teamIssuer), "one fetch of the key set")

	_, ok = proxy.FromContext(r.Context())
	assert.False(t, ok)
}

func TestSandboxNameDefaultsToSandboxID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f, err := e.v.Verify(forwarded(e.token(e.with(map[string]any{"sandbox_name": nil}))))
	require.NoError(t, err)
	assert.Equal(t, "sbx_1", f.SandboxName)
}

func TestAudienceMayBeOneOfSeveral(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.v.Verify(forwarded(e.token(e.with(map[string]any{"aud": []string{"https://other.example.com", forwardURL}}))))
	require.NoError(t, err)
}

// TestRefusals sends one bad request per case and checks that the
// invalid-request handler gets it, with the right error and nothing of the
// token, and that the next handler never runs.
func TestRefusals(t *testing.T) {
	t.Parallel()
	other := rsaKeys()[1]
	cases := []struct {
		name  string
		want  error
		token func(e *env) string           // "" sends no token header
		edit  func(e *env, r *http.Request) // changes the request, if set
		opts  []proxy.Option                // verifier options, if any
		check func(t *testing.T, e *env)    // more checks, if any
	}{
		{name: "no token", want: proxy.ErrMissingToken, token: func(*env) string { return "" }},
		{name: "empty token", want: proxy.ErrMissingToken, edit: func(_ *env, r *http.Request) { r.Header.Set("Vercel-Sandbox-Oidc-Token", "") }},
		{name: "no host", want: proxy.ErrMissingHeader, edit: del("Vercel-Forwarded-Host")},
		{name: "no scheme", want: proxy.ErrMissingHeader, edit: del("Vercel-Forwarded-Scheme")},
		{name: "no port", want: proxy.ErrMissingHeader, edit: del("Vercel-Forwarded-Port")},
		{name: "no path", want: proxy.ErrMissingHeader, edit: del("Vercel-Forwarded-Path")},
		{name: "repeated token", want: proxy.ErrInvalidHeader, edit: func(_ *env, r *http.Request) { r.Header.Add("Vercel-Sandbox-Oidc-Token", "x") }},
		{name: "scheme ftp", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Scheme", "ftp")},
		{name: "port 0", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Port", "0")},
		{name: "port +443", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Port", "+443")},
		{name: "port too big", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Port", "65536")},
		{name: "user info in host", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Host", "user@evil.example.com")},
		{name: "path in host", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Host", "evil.example.com/x")},
		{name: "space in host", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Host", "a b")},
		{name: "relative path", want: proxy.ErrInvalidHeader, edit: set("Vercel-Forwarded-Path", "v1/charges")},
		{name: "not a JWS", want: proxy.ErrInvalidToken, token: func(*env) string { return "not-a-token" }},
		{name: "too long", want: proxy.ErrInvalidToken, token: func(e *env) string {
			return e.token(e.with(map[string]any{"pad": strings.Repeat("x", 20<<10)}))
		}},
		{name: "bad signature", want: proxy.ErrInvalidToken, token: func(e *env) string {
			return sign(t, other, "k1", e.claims()) // the published key id, another key
		}},
		{name: "payload swapped", want: proxy.ErrInvalidToken, token: func(e *env) string {
			good := strings.Split(e.token(e.claims()), ".")
			forged := strings.Split(e.token(e.with(map[string]any{"team_id": "team_evil"})), ".")
			return good[0] + "." + forged[1] + "." + good[2]
		}},
		{name: "alg none", want: proxy.ErrInvalidToken, token: func(e *env) string {
			enc := base64.RawURLEncoding.EncodeToString
			return enc([]byte(`{"alg":"none","kid":"k1"}`)) + "." + enc([]byte(`{"iss":"`+teamIssuer+`"}`)) + "."
		}},
		{name: "alg HS256", want: proxy.ErrInvalidToken, token: func(e *env) string {
			s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
			require.NoError(t, err)
			obj, err := s.Sign([]byte(`{"iss":"` + teamIssuer + `"}`))
			require.NoError(t, err)
			tok, err := obj.CompactSerialize()
			require.NoError(t, err)
			return tok
		}},
		{name: "crit header", want: proxy.ErrInvalidToken, token: func(e *env) string {
			return sign(t, rsaKeys()[0], "k1", e.claims(), map[jose.HeaderKey]any{"crit": []string{"x-vercel"}, "x-vercel": 1})
		}},
		{name: "claims not an object", want: proxy.ErrInvalidToken, token: func(e *env) string {
			return signRaw(t, rsaKeys()[0], "k1", []byte(`["iss"]`))
		}},
		{name: "exp a string", want: proxy.ErrInvalidToken, token: func(e *env) string {
			return e.token(e.with(map[string]any{"exp": "tomorrow"}))
		}},
		{name: "no issuer", want: proxy.ErrInvalidIssuer, token: func(e *env) string { return e.token(e.with(map[string]any{"iss": nil})) }},
		{name: "issuer not a string", want: proxy.ErrInvalidIssuer, token: func(e *env) string { return e.token(e.with(map[string]any{"iss": 1})) }},
		{name: "issuer over http", want: proxy.ErrInvalidIssuer, token: issuer("http://oidc.vercel.com/acme")},
		{name: "issuer of another host", want: proxy.ErrInvalidIssuer, token: issuer("https://oidc.vercel.com.evil.example.com")},
		{name: "issuer with user info", want: proxy.ErrInvalidIssuer, token: issuer("https://evil.example.com@oidc.vercel.com")},
		{name: "issuer of another provider", want: proxy.ErrInvalidIssuer, token: issuer("https://token.actions.githubusercontent.com")},
		{name: "wrong audience", want: proxy.ErrInvalidAudience, token: func(e *env) string {
			return e.token(e.with(map[string]any{"aud": "https://other.example.com/hook"}))
		}},
		{name: "no audience", want: proxy.ErrInvalidAudience, token: func(e *env) string { return e.token(e.with(map[string]any{"aud": nil})) }},
		{name: "audience of the destination", want: proxy.ErrInvalidAudience, token: func(e *env) string {
			return e.token(e.with(map[string]any{"aud": "https://api.example.com"}))
		}},
		{name: "Host header spoofed", want: proxy.ErrInvalidAudience, opts: []proxy.Option{proxy.WithOrigin("https://broker.example.com")},
			token: func(e *env) string { return e.token(e.with(map[string]any{"aud": "https://evil.example.com/hook"})) },
			edit:  func(_ *env, r *http.Request) { r.Host = "evil.example.com" }},
		{name: "expired", want: proxy.ErrExpired, token: func(e *env) string {
			return e.token(e.with(map[string]any{"exp": e.clock.Now().Add(-2 * time.Minute).Unix()}))
		}},
		{name: "no exp", want: proxy.ErrExpired, token: func(e *env) string { return e.token(e.with(map[string]any{"exp": nil})) }},
		{name: "not yet valid", want: proxy.ErrNotYetValid, token: func(e *env) string {
			return e.token(e.with(map[string]any{"nbf": e.clock.Now().Add(2 * time.Minute).Unix()}))
		}},
		{name: "no team_id", want: proxy.ErrMissingClaims, token: func(e *env) string { return e.token(e.with(map[string]any{"team_id": nil})) }},
		{name: "no project_id", want: proxy.ErrMissingClaims, token: func(e *env) string { return e.token(e.with(map[string]any{"project_id": nil})) }},
		{name: "no sandbox_id", want: proxy.ErrMissingClaims, token: func(e *env) string { return e.token(e.with(map[string]any{"sandbox_id": nil})) }},
		{name: "team_id a number", want: proxy.ErrMissingClaims, token: func(e *env) string { return e.token(e.with(map[string]any{"team_id": 7})) }},
		{name: "empty sandbox_id", want: proxy.ErrMissingClaims, token: func(e *env) string { return e.token(e.with(map[string]any{"sandbox_id": ""})) }},
		{name: "unknown key id after one refresh", want: proxy.ErrUnknownKey,
			token: func(e *env) string {
				// A valid request fills the cache; after the refresh interval, an
				// unknown key id makes the verifier fetch the set once more.
				_, err := e.v.Verify(forwarded(e.token(e.claims())))
				require.NoError(t, err)
				e.clock.Advance(31 * time.Second)
				return sign(t, other, "k-unknown", e.claims())
			},
			check: func(t *testing.T, e *env) { assert.Equal(t, 2, e.keys.count(teamIssuer), "one refresh, no more") }},
		{name: "no key id among several keys", want: proxy.ErrUnknownKey,
			token: func(e *env) string {
				e.keys.publish(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0], "k2": rsaKeys()[1]})
				return sign(t, rsaKeys()[0], "", e.claims())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			token := e.token(e.claims())
			if tc.token != nil {
				token = tc.token(e)
			}
			r := forwarded(token)
			if tc.edit != nil {
				tc.edit(e, r)
			}
			status, got, err := e.serve(r)
			assert.Equal(t, http.StatusForbidden, status)
			assert.Nil(t, got, "the next handler never runs")
			require.ErrorIs(t, err, tc.want)
			assertNoToken(t, err.Error(), token)
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

func del(h string) func(*env, *http.Request) {
	return func(_ *env, r *http.Request) { r.Header.Del(h) }
}

func set(h, v string) func(*env, *http.Request) {
	return func(_ *env, r *http.Request) { r.Header.Set(h, v) }
}

func issuer(iss string) func(*env) string {
	return func(e *env) string { return e.token(e.with(map[string]any{"iss": iss})) }
}

// signRaw signs payload as it is.
func signRaw(t testing.TB, key *rsa.PrivateKey, kid string, payload []byte) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, nil)
	require.NoError(t, err)
	obj, err := s.Sign(payload)
	require.NoError(t, err)
	tok, err := obj.CompactSerialize()
	require.NoError(t, err)
	return tok
}

// assertNoToken checks that text holds no part of the token.
func assertNoToken(t *testing.T, text, token string) {
	t.Helper()
	for _, part := range strings.Split(token, ".") {
		if len(part) >= 8 {
			assert.NotContains(t, text, part, "nothing of the token is echoed")
		}
	}
}

func TestDefaultInvalidRequestHandlerAnswers403(t *testing.T) {
	t.Parallel()
	v, err := proxy.NewVerifier()
	require.NoError(t, err)
	called := false
	h := v.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	rec := httptest.NewRecorder()
	token := "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2V2aWwifQ.c2lnbmF0dXJlLW9mLXRoZS1mb3JnZXI"
	h.ServeHTTP(rec, forwarded(token))
	assert.False(t, called)
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Equal(t, "Forbidden\n", rec.Body.String())
	assertNoToken(t, rec.Body.String()+strings.Join(rec.Header().Values("Content-Type"), ""), token)
}

func TestInvalidRequestHandlerGetsRequestWithoutToken(t *testing.T) {
	t.Parallel()
	var seen *http.Request
	v, err := proxy.NewVerifier(proxy.WithInvalidRequestHandler(func(w http.ResponseWriter, r *http.Request, _ error) {
		seen = r
		w.WriteHeader(http.StatusUnauthorized)
	}))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	v.Handler(http.NotFoundHandler()).ServeHTTP(rec, forwarded("a.b.c"))
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	require.NotNil(t, seen)
	assert.Empty(t, seen.Header.Get("Vercel-Sandbox-Oidc-Token"), "a handler that logs the request logs no token")
	assert.Empty(t, seen.Header.Get("Vercel-Forwarded-Host"))
}

func TestClockTolerance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(now time.Time) map[string]any
		want error
	}{
		{"expired 59s ago", func(now time.Time) map[string]any { return map[string]any{"exp": now.Add(-59 * time.Second).Unix()} }, nil},
		{"expired 61s ago", func(now time.Time) map[string]any { return map[string]any{"exp": now.Add(-61 * time.Second).Unix()} }, proxy.ErrExpired},
		{"valid from 59s ahead", func(now time.Time) map[string]any { return map[string]any{"nbf": now.Add(59 * time.Second).Unix()} }, nil},
		{"valid from 61s ahead", func(now time.Time) map[string]any { return map[string]any{"nbf": now.Add(61 * time.Second).Unix()} }, proxy.ErrNotYetValid},
		{"issued 10m ahead", func(now time.Time) map[string]any { return map[string]any{"iat": now.Add(10 * time.Minute).Unix()} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, err := e.v.Verify(forwarded(e.token(e.with(tc.edit(e.clock.Now())))))
			if tc.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.want)
			}
		})
	}
}

// TestForwardURL checks that the audience is the URL the request reached,
// less the forwarded path, and that the destination is rebuilt from the
// headers.
func TestForwardURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		target   string // the URL the request reached
		host     string // the Host header, if not the target's
		fwdPath  string
		scheme   string
		port     string
		opts     []proxy.Option
		audience string
		dest     string
	}{
		{name: "under a path", target: "https://broker.example.com/hook/v1/charges", fwdPath: "/v1/charges",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/v1/charges"},
		{name: "at the root", target: "https://broker.example.com/v1/charges", fwdPath: "/v1/charges",
			audience: "https://broker.example.com", dest: "https://api.example.com/v1/charges"},
		{name: "root path", target: "https://broker.example.com/hook/", fwdPath: "/",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/"},
		{name: "query in the forwarded path", target: "https://broker.example.com/hook/v1?a=1", fwdPath: "/v1?a=1",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/v1?a=1"},
		{name: "trailing slashes", target: "https://broker.example.com/hook//v1/", fwdPath: "/v1/",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/v1/"},
		{name: "dot segments", target: "https://broker.example.com/hook/a/../v1", fwdPath: "/b/../v1",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/b/../v1"},
		{name: "default port in the Host header", target: "https://broker.example.com/hook/v1", host: "Broker.Example.com:443", fwdPath: "/v1",
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/v1"},
		{name: "plain http with a port", target: "http://127.0.0.1:8080/hook/v1", fwdPath: "/v1", scheme: "http", port: "8080",
			audience: "http://127.0.0.1:8080/hook", dest: "http://api.example.com:8080/v1"},
		{name: "behind TLS termination", target: "http://10.0.0.7:8080/hook/v1", fwdPath: "/v1",
			opts:     []proxy.Option{proxy.WithOrigin("https://broker.example.com")},
			audience: "https://broker.example.com/hook", dest: "https://api.example.com/v1"},
		{name: "suffix not at a segment", target: "https://broker.example.com/hookv1", fwdPath: "v1",
			audience: "", dest: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			r := httptest.NewRequest(http.MethodGet, tc.target, nil)
			if tc.host != "" {
				r.Host = tc.host
			}
			r.Header.Set("Vercel-Forwarded-Host", "api.example.com")
			r.Header.Set("Vercel-Forwarded-Scheme", or(tc.scheme, "https"))
			r.Header.Set("Vercel-Forwarded-Port", or(tc.port, "443"))
			r.Header.Set("Vercel-Forwarded-Path", tc.fwdPath)
			r.Header.Set("Vercel-Sandbox-Oidc-Token", e.token(e.with(map[string]any{"aud": or(tc.audience, "x")})))
			f, err := e.v.Verify(r)
			if tc.dest == "" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.dest, f.URL.String())
		})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestDestinationIPv6(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := forwarded(e.token(e.claims()))
	r.Header.Set("Vercel-Forwarded-Host", "[2001:db8::1]")
	r.Header.Set("Vercel-Forwarded-Port", "8443")
	f, err := e.v.Verify(r)
	require.NoError(t, err)
	assert.Equal(t, "https://[2001:db8::1]:8443/v1/charges?live=1", f.URL.String())
}

func TestOptionsRefuseBadValues(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]proxy.Option{
		"nil handler":           proxy.WithInvalidRequestHandler(nil),
		"nil client":            proxy.WithHTTPClient(nil),
		"nil clock":             proxy.WithClock(nil),
		"origin with a path":    proxy.WithOrigin("https://broker.example.com/hook"),
		"origin without scheme": proxy.WithOrigin("broker.example.com"),
		"issuer http remote":    proxy.WithTrustedIssuer("http://issuer.example.com"),
		"issuer *.localhost":    proxy.WithTrustedIssuer("http://keys.localhost:9"),
		"issuer localhost.":     proxy.WithTrustedIssuer("http://localhost.:9"),
		"issuer not a URL":      proxy.WithTrustedIssuer("issuer"),
		"issuer with a query":   proxy.WithTrustedIssuer("https://issuer.example.com/?a=1"),
		"negative interval":     proxy.WithRefreshInterval(-time.Second),
		"interval 0":            proxy.WithRefreshInterval(0),
	} {
		_, err := proxy.NewVerifier(o)
		var ie *proxy.InputError
		if assert.ErrorAs(t, err, &ie, name) {
			assert.True(t, strings.HasPrefix(ie.Field, "With"), "%s: the error names the option: %v", name, err)
		}
		assert.ErrorIs(t, err, proxy.ErrInvalidInput, name)
	}
	_, err := proxy.NewVerifier(nil, proxy.WithRefreshInterval(time.Minute))
	assert.NoError(t, err, "a nil option is ignored")
	for _, iss := range []string{"https://issuer.example.com", "http://127.0.0.1:8080", "http://[::1]:1/x", "http://localhost:9", "http://LocalHost:9"} {
		_, err := proxy.NewVerifier(proxy.WithTrustedIssuer(iss))
		assert.NoError(t, err, iss)
	}
	// localhost is dialled without DNS, which a transport of unknown kind
	// cannot promise.
	opaque := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })}
	_, err = proxy.NewVerifier(proxy.WithTrustedIssuer("http://localhost:9"), proxy.WithHTTPClient(opaque))
	assert.ErrorIs(t, err, sandbox.ErrInsecureURL)
	_, err = proxy.NewVerifier(proxy.WithTrustedIssuer("http://127.0.0.1:9"), proxy.WithHTTPClient(opaque))
	assert.NoError(t, err)
}

// A Verifier not made by NewVerifier refuses to verify, and a handler is
// refused when it is built, never when a request arrives.
func TestVerifierMisuse(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
	for _, v := range []*proxy.Verifier{nil, {}} {
		_, err := v.Verify(r)
		assert.ErrorIs(t, err, proxy.ErrInvalidInput)
		assert.Panics(t, func() { v.Handler(http.NotFoundHandler()) })
	}
	v, err := proxy.NewVerifier()
	require.NoError(t, err)
	_, err = v.Verify(nil)
	assert.ErrorIs(t, err, proxy.ErrInvalidInput)
	assert.PanicsWithValue(t, "proxy: Verifier.Handler: next must not be nil", func() { v.Handler(nil) })
}
