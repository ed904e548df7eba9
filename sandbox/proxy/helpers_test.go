package proxy_test

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

const (
	teamIssuer  = "https://oidc.vercel.com/acme"
	forwardURL  = "https://broker.example.com/hook"
	requestURL  = "https://broker.example.com/hook/v1/charges?live=1"
	sandboxPath = "/v1/charges?live=1"
)

// rsaKeys are generated once per test binary: generating 2048-bit keys is
// slow, and every test needs some.
var rsaKeys = sync.OnceValue(func() []*rsa.PrivateKey {
	keys := make([]*rsa.PrivateKey, 3)
	for i := range keys {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

// keySetJSON returns a JSON Web Key Set of the public halves of keys.
func keySetJSON(keys map[string]*rsa.PrivateKey) []byte {
	var set jose.JSONWebKeySet
	for kid, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		panic(err)
	}
	return b
}

// issuers is a transport that serves the key set of every issuer under
// https://oidc.vercel.com, and counts the fetches.
type issuers struct {
	mu        sync.Mutex
	published map[string]*rsa.PrivateKey
	fetches   map[string]int // by issuer
	// respond, when set, answers instead.
	respond func(*http.Request) (*http.Response, error)
}

func newIssuers() *issuers {
	return &issuers{published: map[string]*rsa.PrivateKey{"k1": rsaKeys()[0]}, fetches: map[string]int{}}
}

func (is *issuers) RoundTrip(r *http.Request) (*http.Response, error) {
	is.mu.Lock()
	iss, ok := strings.CutSuffix(r.URL.String(), "/.well-known/jwks")
	if ok {
		is.fetches[iss]++
	}
	body, respond := keySetJSON(is.published), is.respond
	is.mu.Unlock()
	if respond != nil {
		return respond(r)
	}
	if !ok || r.Method != http.MethodGet {
		return response(http.StatusNotFound, nil), nil
	}
	return response(http.StatusOK, body), nil
}

func response(status int, body []byte) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body))}
}

// publish replaces the published keys.
func (is *issuers) publish(keys map[string]*rsa.PrivateKey) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = keys
}

// count returns the fetches of one issuer's key set, or of all with "".
func (is *issuers) count(iss string) int {
	is.mu.Lock()
	defer is.mu.Unlock()
	if iss != "" {
		return is.fetches[iss]
	}
	n := 0
	for _, c := range is.fetches {
		n += c
	}
	return n
}

// clock is a settable clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// env is a verifier in front of a handler that records what it gets, with
// a key-set transport and a clock of its own.
type env struct {
	t      testing.TB
	keys   *issuers
	clock  *clock
	v      *proxy.Verifier
	h      http.Handler
	mu     sync.Mutex
	passed *http.Request // the last request next received
	err    error         // the last error the invalid-request handler received
}

func newEnv(t testing.TB, opts ...proxy.Option) *env {
	t.Helper()
	e := &env{t: t, keys: newIssuers(), clock: newClock()}
	base := []proxy.Option{
		proxy.WithTrustedIssuer(teamIssuer),
		proxy.WithHTTPClient(&http.Client{Transport: e.keys}),
		proxy.WithClock(e.clock.Now),
		proxy.WithInvalidRequestHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			e.mu.Lock()
			e.err = err
			e.mu.Unlock()
			http.Error(w, "refused", http.StatusForbidden)
		}),
	}
	v, err := proxy.NewVerifier(append(base, opts...)...)
	require.NoError(t, err)
	e.v = v
	e.h = v.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.passed = r
		e.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	return e
}

// claims returns the claims of a valid token, expiring in 10 minutes.
func (e *env) claims() map[string]any {
	now := e.clock.Now().Unix()
	return map[string]any{
		"iss": teamIssuer, "aud": forwardURL, "sub": "owner:acme:project:broker:environment:production",
		"iat": now, "nbf": now, "exp": now + 600,
		"team_id": "team_1", "project_id": "prj_1", "sandbox_id": "sbx_1", "sandbox_name": "agent",
	}
}

// with returns the valid claims changed by kv (a nil value deletes).
func (e *env) with(kv map[string]any) map[string]any {
	c := e.claims()
	maps.Copy(c, kv)
	for k, v := range c {
		if v == nil {
			delete(c, k)
		}
	}
	return c
}

// sign returns a compact RS256 JWS of claims with key id kid ("" for none).
func sign(t testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any, headers ...map[jose.HeaderKey]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	opts.WithType("JWT")
	for _, h := range headers {
		for k, v := range h {
			opts.WithHeader(k, v)
		}
	}
	var sk any = key
	if kid != "" {
		sk = jose.JSONWebKey{Key: key, KeyID: kid}
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: sk}, opts)
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	obj, err := s.Sign(payload)
	require.NoError(t, err)
	tok, err := obj.CompactSerialize()
	require.NoError(t, err)
	return tok
}

// forge returns a token of claims that names key id kid and carries a
// signature no key made: what a forger sends. It costs no RSA operation,
// so a test can send thousands.
func forge(kid string, claims map[string]any) string {
	enc := base64.RawURLEncoding.EncodeToString
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
	if err != nil {
		panic(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	return enc(header) + "." + enc(payload) + "." + enc(bytes.Repeat([]byte{0x5a}, 256))
}

// token returns a valid token with the published key k1.
func (e *env) token(claims map[string]any) string {
	return sign(e.t, rsaKeys()[0], "k1", claims)
}

// forwarded returns a request as Vercel forwards one, to requestURL, for
// the sandbox's https://api.example.com/v1/charges?live=1.
func forwarded(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, requestURL, strings.NewReader(`{"amount":100}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Vercel-Forwarded-Host", "api.example.com")
	r.Header.Set("Vercel-Forwarded-Scheme", "https")
	r.Header.Set("Vercel-Forwarded-Port", "443")
	r.Header.Set("Vercel-Forwarded-Path", sandboxPath)
	if token != "" {
		r.Header.Set("Vercel-Sandbox-Oidc-Token", token)
	}
	return r
}

// serve sends r through the handler and returns the status, the request
// next received (nil if refused) and the error the invalid-request handler
// received.
func (e *env) serve(r *http.Request) (int, *http.Request, error) {
	e.mu.Lock()
	e.passed, e.err = nil, nil
	e.mu.Unlock()
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, r)
	e.mu.Lock()
	defer e.mu.Unlock()
	return rec.Code, e.passed, e.err
}
