package httpcore

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth"
)

func TestMain(m *testing.M) {
	// Every test closes its server and the idle connections of its own
	// transport (see newServer, newClient), so no net/http goroutine needs
	// to be ignored.
	goleak.VerifyTestMain(m)
}

// canary is the token of every test client. It must never show up in an
// error string or a log record.
const canary = "canary-secret-123"

// fastRetry keeps backoffs tiny so that retry tests run in milliseconds.
var fastRetry = RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

func staticProvider(token, team, project string) auth.ProviderFunc {
	return func(context.Context) (auth.Credentials, error) {
		return auth.Credentials{Token: token, TeamID: team, ProjectID: project, Source: auth.SourceExplicit}, nil
	}
}

// refreshingProvider hands out canary-secret-123-<gen> and moves to the
// next generation when told that the current token was rejected.
type refreshingProvider struct {
	mu          sync.Mutex
	gen         int
	invalidated []string
}

func (p *refreshingProvider) Credentials(context.Context) (auth.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return auth.Credentials{Token: fmt.Sprintf("%s-%d", canary, p.gen), TeamID: "team_prov"}, nil
}

func (p *refreshingProvider) Invalidate(stale string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.invalidated = append(p.invalidated, stale)
	if stale == fmt.Sprintf("%s-%d", canary, p.gen) {
		p.gen++
	}
}

func (p *refreshingProvider) invalidations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.invalidated...)
}

var _ auth.Invalidator = (*refreshingProvider)(nil)

// handler answers the n-th request (counting from 1) a test server gets.
type handler func(w http.ResponseWriter, r *http.Request, n int32)

// newServer starts a test server that counts the requests it receives.
func newServer(t *testing.T, h handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, hits.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// newClient returns a client for baseURL with the canary token, fast
// retries and a transport of its own whose idle connections are closed
// when the test ends.
func newClient(t *testing.T, baseURL string, mods ...func(*Config)) *Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	cfg := Config{
		BaseURL:   baseURL,
		Provider:  staticProvider(canary, "team_prov", "prj_prov"),
		Transport: tr,
		Retry:     fastRetry,
	}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

func withRetry(p RetryPolicy) func(*Config) { return func(c *Config) { c.Retry = p } }

func withProvider(p auth.Provider) func(*Config) { return func(c *Config) { c.Provider = p } }

// noSecret asserts that err, if any, does not reveal the token.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		assert.NotContains(t, err.Error(), canary)
		assert.NotContains(t, fmt.Sprintf("%+v", err), canary)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vercel-Id", "iad1::req-1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// hijackClose reads the whole request, then drops the connection without
// answering: the server may have acted, the client cannot know.
func hijackClose(t *testing.T, w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	hj, ok := w.(http.Hijacker)
	if !assert.True(t, ok) {
		return
	}
	conn, _, err := hj.Hijack()
	if assert.NoError(t, err) {
		_ = conn.Close()
	}
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// captureHandler keeps every slog record.
type captureHandler struct {
	mu   *sync.Mutex
	recs *[]slog.Record
}

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, r.Clone())
	return nil
}

func (h captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h captureHandler) WithGroup(string) slog.Handler { return h }
