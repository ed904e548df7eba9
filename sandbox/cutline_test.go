package sandbox_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A connection that breaks in the middle of an output line cut the stream,
// which is followed through the logs like any other cut, not a malformed
// frame that ends the run (found by the soak test, where a reset fell
// inside a long line).
func TestFaultResetInsideLineReattaches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", sandboxtest.Steps{}.Stdout("first\n").Stdout("second line\n").Stdout("last\n").Exit(0))
	// The attached stream breaks inside the frame of "second line".
	breakInside := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		resp, err := next(req)
		if err == nil && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/cmd") {
			resp.Body = &breakAfter{ReadCloser: resp.Body, marker: []byte("second")}
		}
		return resp, err
	}
	sb, err := e.srv.Client(sandbox.WithMiddleware(breakInside)).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	assert.Equal(t, "first\nsecond line\nlast\n", out.String(), "every byte once: the broken line comes whole from the replay")
	assert.Equal(t, 1, e.srv.CommandCount(), "not run again")
	assert.NotEmpty(t, requests(e.srv, "GET", "/logs"), "followed through the logs")
}

// breakAfter passes a body through up to the first byte of marker, then
// fails as a reset connection does.
type breakAfter struct {
	io.ReadCloser
	marker []byte
	seen   []byte
	broken bool
}

func (b *breakAfter) Read(p []byte) (int, error) {
	if b.broken {
		return 0, syscall.ECONNRESET
	}
	n, err := b.ReadCloser.Read(p)
	b.seen = append(b.seen, p[:n]...)
	if i := bytes.Index(b.seen, b.marker); i >= 0 {
		b.broken = true
		keep := n - (len(b.seen) - i - 1) // up to the marker's first byte
		return keep, nil
	}
	return n, err
}
