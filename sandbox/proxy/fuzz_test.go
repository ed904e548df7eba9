package proxy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

var sentinels = []error{
	proxy.ErrMissingToken, proxy.ErrMissingHeader, proxy.ErrInvalidHeader, proxy.ErrInvalidToken,
	proxy.ErrInvalidIssuer, proxy.ErrInvalidAudience, proxy.ErrExpired, proxy.ErrNotYetValid,
	proxy.ErrUnknownKey, proxy.ErrKeySetUnavailable, proxy.ErrMissingClaims,
}

// FuzzVerify feeds the verifier arbitrary tokens and forwarded headers. It
// must not panic, must refuse with one of the package's errors that holds
// nothing of the token, and must accept only a token it can verify.
func FuzzVerify(f *testing.F) {
	e := newEnv(f)
	valid := e.token(e.claims())
	f.Add(valid, "api.example.com", "https", "443", sandboxPath)
	f.Add(sign(f, rsaKeys()[1], "k1", e.claims()), "api.example.com", "https", "443", sandboxPath)
	f.Add(e.token(e.with(map[string]any{"iss": "https://oidc.vercel.com/other"})), "[::1]", "HTTP", "80", "/")
	f.Add(e.token(e.with(map[string]any{"exp": "x"})), "a@b", "https", "0", "//x/../y?z#w")
	f.Add("eyJhbGciOiJub25lIn0.e30.", "h", "https", "1", "/")
	f.Add("a.b.c", "", "", "", "")
	f.Fuzz(func(t *testing.T, token, host, scheme, port, path string) {
		r := httptest.NewRequest(http.MethodGet, requestURL, nil)
		for name, v := range map[string]string{"Vercel-Sandbox-Oidc-Token": token, "Vercel-Forwarded-Host": host,
			"Vercel-Forwarded-Scheme": scheme, "Vercel-Forwarded-Port": port, "Vercel-Forwarded-Path": path} {
			r.Header[name] = []string{v}
		}
		fwd, err := e.v.Verify(r)
		if err == nil {
			if token != valid || fwd.URL == nil || fwd.TeamID == "" || fwd.SandboxName == "" {
				t.Fatalf("accepted %+v", fwd)
			}
			return
		}
		known := false
		for _, s := range sentinels {
			known = known || errors.Is(err, s)
		}
		if !known {
			t.Fatalf("error matches none of the package's errors: %v", err)
		}
		if len(token) >= 24 && strings.Contains(err.Error(), token) {
			t.Fatalf("error holds the token: %v", err)
		}
	})
}

// FuzzKeySet feeds the verifier arbitrary key sets: none may make it
// panic or accept a token its keys did not sign.
func FuzzKeySet(f *testing.F) {
	f.Add(`{"keys":[]}`)
	f.Add(`{"keys":[{"kty":"RSA","kid":"k1","n":"AQAB","e":"AQAB"}]}`)
	f.Add(`{"keys":[{"kty":"EC","crv":"P-256","x":"","y":""},{"kty":"oct","k":"AA"}]}`)
	f.Add(string(keySetJSON(nil)))
	f.Add(`{"keys":[{"kty":"RSA","kid":"k1","key_ops":["sign"],"use":"enc","alg":"RS256"}]}`)
	forged := ""
	f.Fuzz(func(t *testing.T, body string) {
		e := newEnv(t)
		e.keys.respond = status(http.StatusOK, []byte(body))
		if forged == "" {
			forged = e.token(e.claims())
		}
		if _, err := e.v.Verify(forwarded(forged)); err == nil {
			t.Fatal("accepted a token signed by a key the set does not hold")
		}
	})
}
