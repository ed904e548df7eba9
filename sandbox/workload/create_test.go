package workload_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestCreateRetriesTransientFailures(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			srv := sandboxtest.NewServer(t)
			f := &faults{status: status}
			f.n.Store(2)
			var mu sync.Mutex
			var retries []int
			rp := fastRetry
			rp.OnRetry = func(ev sandbox.RetryEvent) {
				mu.Lock()
				defer mu.Unlock()
				retries = append(retries, ev.Attempt)
				assert.Equal(t, status, ev.StatusCode)
			}
			sb, err := workload.Create(context.Background(), newClientWith(t, srv, rp, f.middleware), sandbox.CreateParams{})
			require.NoError(t, err)
			assert.Equal(t, int32(3), f.sent.Load())
			assert.Equal(t, []int{2, 3}, retries, "one OnRetry reports every retry")
			assert.Regexp(t, `^sbx-[0-9a-f]{16}$`, sb.Name(), "an unnamed sandbox is named so it can be looked up")
			assert.Len(t, srv.Sandboxes(), 1, "exactly one sandbox exists")
		})
	}
}

func TestCreateOutcomeUnknownFindsTheSandbox(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	// The server creates the sandbox, but the answer is lost (502).
	f := &faults{status: http.StatusBadGateway, pass: true}
	f.n.Store(1)
	sb, err := workload.Create(context.Background(), newClient(t, srv, f.middleware), sandbox.CreateParams{Name: "agent-42"})
	require.NoError(t, err)
	assert.Equal(t, int32(1), f.sent.Load(), "the create was not sent twice")
	assert.Equal(t, "agent-42", sb.Name())
	assert.NotEmpty(t, sb.SessionID())
	assert.Len(t, srv.Sandboxes(), 1)
}

func TestCreateOutcomeUnknownOnLastAttempt(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusInternalServerError, pass: true}
	f.n.Store(1)
	c := newClientWith(t, srv, sandbox.RetryPolicy{MaxRetries: -1}, f.middleware)
	sb, err := workload.Create(context.Background(), c, sandbox.CreateParams{})
	require.NoError(t, err, "the sandbox the only attempt created is found, not leaked")
	assert.Equal(t, int32(1), f.sent.Load())
	assert.Len(t, srv.Sandboxes(), 1)
	assert.Equal(t, srv.Sandboxes()[0].Name, sb.Name())
}

func TestCreateOutcomeUnknownThenNameTaken(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusBadGateway, pass: true}
	f.n.Store(1)
	var lookups atomic.Int32
	// The first lookup does not see the sandbox yet (it is still being
	// created); the second create is refused as a duplicate name.
	lagging := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/sandboxes/agent-7") && lookups.Add(1) == 1 {
			return respond(req, http.StatusNotFound, ""), nil
		}
		return f.middleware(req, next)
	}
	sb, err := workload.Create(context.Background(), newClient(t, srv, lagging), sandbox.CreateParams{Name: "agent-7"})
	require.NoError(t, err)
	assert.Equal(t, int32(2), f.sent.Load())
	assert.Equal(t, "agent-7", sb.Name())
	assert.Len(t, srv.Sandboxes(), 1)
	assert.Equal(t, int32(2), lookups.Load())
}

func TestCreateDoesNotRetryClientErrors(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			srv := sandboxtest.NewServer(t)
			f := &faults{status: status}
			f.n.Store(5)
			_, err := workload.Create(context.Background(), newClient(t, srv, f.middleware), sandbox.CreateParams{})
			require.Error(t, err)
			assert.Equal(t, int32(1), f.sent.Load())
			assert.ErrorIs(t, err, workload.ErrCreationFailed)
			var ae *sandbox.APIError
			require.ErrorAs(t, err, &ae, "the cause stays reachable")
			assert.Equal(t, status, ae.StatusCode)
			assert.Empty(t, srv.Sandboxes())
		})
	}
}

func TestCreateExistingNameIsNotAdopted(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{}
	c := newClient(t, srv, f.middleware)
	_, err := c.Create(context.Background(), sandbox.CreateParams{Name: "taken"})
	require.NoError(t, err)
	_, err = workload.Create(context.Background(), c, sandbox.CreateParams{Name: "taken"})
	assert.ErrorIs(t, err, workload.ErrCreationFailed)
	assert.Equal(t, int32(2), f.sent.Load(), "one create each")
	assert.Len(t, srv.Sandboxes(), 1)
}

func TestCreateGivesUp(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusServiceUnavailable}
	f.n.Store(100)
	c := newClientWith(t, srv, sandbox.RetryPolicy{MaxRetries: 3, BaseDelay: time.Millisecond}, f.middleware)
	_, err := workload.Create(context.Background(), c, sandbox.CreateParams{})
	require.Error(t, err)
	assert.Equal(t, int32(4), f.sent.Load())
	assert.Equal(t, workload.CodeCreationFailed, workload.ErrorCodeOf(err))
	assert.ErrorIs(t, err, sandbox.ErrServer)
	var we *workload.Error
	require.ErrorAs(t, err, &we)
	assert.NotContains(t, we.UserMessage(), "503")
	assert.Empty(t, srv.Sandboxes())
}

func TestCreateInvalidInput(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	_, err := workload.Create(context.Background(), newClient(t, srv), sandbox.CreateParams{VCPUs: 3})
	assert.ErrorIs(t, err, workload.ErrInvalidInput)
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Empty(t, srv.Requests())
}

func TestCreateStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusServiceUnavailable}
	f.n.Store(100)
	ctx, cancel := context.WithCancel(context.Background())
	rp := sandbox.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour, OnRetry: func(sandbox.RetryEvent) { cancel() }}
	_, err := workload.Create(ctx, newClientWith(t, srv, rp, f.middleware), sandbox.CreateParams{})
	assert.ErrorIs(t, err, workload.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(1), f.sent.Load())
}
