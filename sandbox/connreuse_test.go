package sandbox_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// counted is a sandbox of the local backend, served by a server that
// counts the connections clients open to it.
type counted struct {
	sb    *sandbox.Sandbox
	url   string
	token string
	conns *atomic.Int64
}

// countedSandbox serves the local backend with a fresh Script (true, echo
// and lines registered) and creates a sandbox on it.
func countedSandbox(tb testing.TB, opts ...sandbox.Option) counted {
	tb.Helper()
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	script.Handle(sandboxtest.MatchName("lines"), linesHandler())
	srv, err := local.New(local.WithExecutor(script))
	require.NoError(tb, err)
	tb.Cleanup(srv.Close)
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	tb.Cleanup(ts.Close)
	c, err := sandbox.NewClient(append([]sandbox.Option{sandbox.WithBaseURL(ts.URL), sandbox.WithToken(srv.Token()),
		sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID)}, opts...)...)
	require.NoError(tb, err)
	sb, err := c.Create(context.Background(), sandbox.CreateParams{})
	require.NoError(tb, err)
	return counted{sb: sb, url: ts.URL, token: srv.Token(), conns: &conns}
}

// TestAttachedRunsReuseConnectionsLocal runs 100 attached commands in a
// row against the local backend: each stream is read to its end, so they
// all go over the connection that created the sandbox.
func TestAttachedRunsReuseConnectionsLocal(t *testing.T) {
	t.Parallel()
	cs := countedSandbox(t)
	for range 100 {
		res, err := cs.sb.Command("echo", "hi").Run(t.Context())
		require.NoError(t, err)
		require.Equal(t, "hi\n", string(res.Stdout))
	}
	assert.LessOrEqual(t, cs.conns.Load(), int64(2), "connections opened by a create and 100 runs")
}
