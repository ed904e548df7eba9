package sandbox_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// env is one fake server with a scripted executor and a client aimed at it.
type env struct {
	t      *testing.T
	srv    *sandboxtest.Server
	script *sandboxtest.Script
	c      *sandbox.Client
}

// newEnv starts a fake whose commands are played by a fresh Script (echo
// and true are registered). Extra server options come after the executor,
// so a test may replace it.
func newEnv(t *testing.T, opts ...local.Option) *env {
	t.Helper()
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	srv := sandboxtest.NewServer(t, append([]local.Option{local.WithExecutor(script)}, opts...)...)
	return &env{t: t, srv: srv, script: script, c: srv.Client()}
}

// newLocalEnv starts a fake that runs real host processes in host-path mode.
func newLocalEnv(t *testing.T, opts ...local.Option) *env {
	t.Helper()
	srv := sandboxtest.NewServer(t, append([]local.Option{
		local.WithExecutor(hostexec.New()),
		local.WithHostPaths(true),
	}, opts...)...)
	return &env{t: t, srv: srv, c: srv.Client()}
}

// create creates a sandbox with the given name (empty: generated).
func (e *env) create(name string) *sandbox.Sandbox {
	e.t.Helper()
	sb, err := e.c.Create(e.t.Context(), sandbox.CreateParams{Name: name})
	require.NoError(e.t, err)
	require.Equal(e.t, sandbox.StatusRunning, sb.Session().Status)
	return sb
}

// handle registers a scripted handler for the commands named name.
func (e *env) handle(name string, h sandboxtest.Handler) {
	e.script.Handle(sandboxtest.MatchName(name), h)
}

// requests returns the requests the fake received with this method whose
// path ends with suffix.
func requests(srv *sandboxtest.Server, method, suffix string) []local.Request {
	var out []local.Request
	for _, r := range srv.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

// resumeRequests returns the GETs that asked for a resume.
func resumeRequests(srv *sandboxtest.Server) []local.Request {
	var out []local.Request
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet && r.Query.Get("resume") == "true" {
			out = append(out, r)
		}
	}
	return out
}

// jsonBody decodes a recorded JSON body into a generic map.
func jsonBody(t *testing.T, r local.Request) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body %q", r.Body)
	return m
}

// proxy serves the fake's handler behind a handler of the test's own, for
// fault injection. It returns a client aimed at the proxy. The fake is
// closed before the proxy, so that no request is left blocked.
func proxy(t *testing.T, srv *sandboxtest.Server, h func(w http.ResponseWriter, r *http.Request, next http.Handler), opts ...sandbox.Option) *sandbox.Client {
	t.Helper()
	next := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, next) }))
	t.Cleanup(func() {
		srv.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return srv.Client(append([]sandbox.Option{sandbox.WithBaseURL(ts.URL)}, opts...)...)
}

// counter counts requests by key.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// isCmdPost reports whether r starts a command.
func isCmdPost(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cmd")
}

// writeAPIError answers with the API's JSON error body.
func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// chunks records the writes of attached runs, in order, across streams.
type chunks struct {
	mu     sync.Mutex
	list   []chunk
	first  chan struct{}
	closed atomic.Bool
}

type chunk struct {
	stream string
	data   string
}

func newChunks() *chunks { return &chunks{first: make(chan struct{})} }

func (c *chunks) writer(stream string) *chunkWriter { return &chunkWriter{c: c, stream: stream} }

func (c *chunks) all() []chunk {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]chunk(nil), c.list...)
}

type chunkWriter struct {
	c      *chunks
	stream string
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	w.c.list = append(w.c.list, chunk{w.stream, string(p)})
	w.c.mu.Unlock()
	if w.c.closed.CompareAndSwap(false, true) {
		close(w.c.first)
	}
	return len(p), nil
}

// waitFor fails the test unless ch is closed within a generous bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// commandDone reports whether the fake's only (or given) command finished.
func commandDone(srv *sandboxtest.Server, id string) bool {
	for _, c := range srv.Commands() {
		if c.Command.ID == id {
			return c.Command.ExitCode != nil
		}
	}
	return false
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// atLevel asks for a gzip level as compress/gzip numbers it, where
// gzip.NoCompression is Stored.
func atLevel(level int) files.WriteParams {
	if level == gzip.NoCompression {
		return files.WriteParams{Stored: true}
	}
	return files.WriteParams{Level: level}
}
