package sandbox_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// hostileToken is the token of hostileClient; hostile servers echo it.
const hostileToken = "vcp_hostileCanary0123456789abcdefXYZ"

// hostileClient returns a client of a server the test writes by hand, to
// play a broken or hostile API, with a transport of its own and tiny
// retry delays.
func hostileClient(t *testing.T, h http.HandlerFunc, opts ...sandbox.Option) *sandbox.Client {
	t.Helper()
	ts := httptest.NewServer(h)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.CloseClientConnections()
		ts.Close()
	})
	c, err := sandbox.NewClient(append([]sandbox.Option{
		sandbox.WithBaseURL(ts.URL), sandbox.WithTransport(tr),
		sandbox.WithToken(hostileToken, "team_hostile", "prj_hostile"),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}),
	}, opts...)...)
	require.NoError(t, err)
	return c
}
