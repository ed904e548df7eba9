package proxy_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

// A broker mounted at the forwardURL https://broker.example.com/hook. It
// adds a secret to the requests of the sandboxes of one team.
func ExampleVerifier_Handler() {
	v, err := proxy.NewVerifier(proxy.WithOrigin("https://broker.example.com"))
	if err != nil {
		log.Fatal(err)
	}
	broker := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, _ := proxy.FromContext(r.Context())
		if f.TeamID != "team_abc" {
			http.Error(w, "not a sandbox of ours", http.StatusForbidden)
			return
		}
		// Here: send r on to f.URL with the secret in its Authorization header.
		fmt.Fprintf(w, "%s %s for sandbox %s\n", r.Method, f.URL, f.SandboxName)
	})
	mux := http.NewServeMux()
	mux.Handle("/hook/", v.Handler(broker))

	// A request that no network policy forwarded has no token: refused.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://broker.example.com/hook/v1/charges", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 403 Forbidden
}

// An invalid-request handler that tells callers without a token apart,
// and logs the reason of every refusal (which never holds the token).
func ExampleWithInvalidRequestHandler() {
	v, err := proxy.NewVerifier(proxy.WithInvalidRequestHandler(func(w http.ResponseWriter, r *http.Request, err error) {
		fmt.Println("refused:", err)
		if errors.Is(err, proxy.ErrMissingToken) {
			http.Error(w, "only sandboxes may call this", http.StatusUnauthorized)
			return
		}
		http.Error(w, "Forbidden", http.StatusForbidden)
	}))
	if err != nil {
		log.Fatal(err)
	}
	h := v.Handler(http.NotFoundHandler())

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://broker.example.com/hook", nil))
	fmt.Println(rec.Code)

	r := httptest.NewRequest(http.MethodGet, "https://broker.example.com/hook", nil)
	r.Header.Set("Vercel-Sandbox-Oidc-Token", "not.a.token")
	r.Header.Set("Vercel-Forwarded-Host", "api.example.com")
	r.Header.Set("Vercel-Forwarded-Scheme", "https")
	r.Header.Set("Vercel-Forwarded-Port", "443")
	r.Header.Set("Vercel-Forwarded-Path", "/")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	fmt.Println(rec.Code)
	// Output:
	// refused: proxy: no vercel-sandbox-oidc-token header
	// 401
	// refused: proxy: invalid token: not a compact JWS signed with RS256
	// 403
}
