package workload_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
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
			var retries []int
			rp := fastRetry
			rp.OnRetry = func(n int, err error, _ time.Duration) {
				retries = append(retries, n)
				assert.True(t, workload.Transient(err), "%v", err)
			}
			sb, attempts, err := workload.Create(context.Background(), newClient(t, srv, f.middleware), sandbox.CreateParams{}, rp)
			require.NoError(t, err)
			assert.Equal(t, 3, attempts)
			assert.Equal(t, []int{1, 2}, retries)
			assert.Regexp(t, `^wl-[0-9a-f]{16}$`, sb.Name())
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
	sb, attempts, err := workload.Create(context.Background(), newClient(t, srv, f.middleware),
		sandbox.CreateParams{Name: "agent-42"}, fastRetry)
	require.NoError(t, err)
	assert.Equal(t, 1, attempts, "the create was not sent twice")
	assert.Equal(t, int32(1), f.sent.Load())
	assert.Equal(t, "agent-42", sb.Name())
	assert.NotEmpty(t, sb.SessionID())
	assert.Len(t, srv.Sandboxes(), 1)
}

func TestCreateOutcomeUnknownOnLastAttempt(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusInternalServerError, pass: true}
	f.n.Store(1)
	sb, attempts, err := workload.Create(context.Background(), newClient(t, srv, f.middleware),
		sandbox.CreateParams{}, workload.RetryPolicy{Attempts: 1})
	require.NoError(t, err, "the sandbox the only attempt created is found, not leaked")
	assert.Equal(t, 1, attempts)
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
	sb, attempts, err := workload.Create(context.Background(), newClient(t, srv, lagging), sandbox.CreateParams{Name: "agent-7"}, fastRetry)
	require.NoError(t, err)
	assert.Equal(t, 2, attempts)
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
			_, attempts, err := workload.Create(context.Background(), newClient(t, srv, f.middleware), sandbox.CreateParams{}, fastRetry)
			require.Error(t, err)
			assert.Equal(t, 1, attempts)
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
	c := newClient(t, srv)
	_, err := c.Create(context.Background(), sandbox.CreateParams{Name: "taken"})
	require.NoError(t, err)
	_, attempts, err := workload.Create(context.Background(), c, sandbox.CreateParams{Name: "taken"}, fastRetry)
	assert.ErrorIs(t, err, workload.ErrCreationFailed)
	assert.Equal(t, 1, attempts)
	assert.Len(t, srv.Sandboxes(), 1)
}

func TestCreateGivesUp(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusServiceUnavailable}
	f.n.Store(100)
	_, attempts, err := workload.Create(context.Background(), newClient(t, srv, f.middleware),
		sandbox.CreateParams{}, workload.RetryPolicy{Attempts: 4, InitialBackoff: time.Millisecond})
	require.Error(t, err)
	assert.Equal(t, 4, attempts)
	assert.Equal(t, workload.CodeCreationFailed, workload.CodeOf(err))
	assert.ErrorIs(t, err, sandbox.ErrServer)
	var we *workload.Error
	require.ErrorAs(t, err, &we)
	assert.NotContains(t, we.UserMessage(), "503")
}

func TestCreateInvalidInput(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	_, attempts, err := workload.Create(context.Background(), newClient(t, srv), sandbox.CreateParams{VCPUs: 3}, fastRetry)
	assert.ErrorIs(t, err, workload.ErrInvalidInput)
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Equal(t, 0, attempts)
	assert.Empty(t, srv.Requests())
}

func TestCreateStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusServiceUnavailable}
	f.n.Store(100)
	ctx, cancel := context.WithCancel(context.Background())
	rp := workload.RetryPolicy{InitialBackoff: time.Hour, OnRetry: func(int, error, time.Duration) { cancel() }}
	_, attempts, err := workload.Create(ctx, newClient(t, srv, f.middleware), sandbox.CreateParams{}, rp)
	assert.ErrorIs(t, err, workload.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, attempts)
}

func TestBackoff(t *testing.T) {
	rp := workload.RetryPolicy{InitialBackoff: time.Second, MaxBackoff: 5 * time.Second}
	assert.Equal(t, time.Second, rp.Backoff(1))
	assert.Equal(t, 2*time.Second, rp.Backoff(2))
	assert.Equal(t, 4*time.Second, rp.Backoff(3))
	assert.Equal(t, 5*time.Second, rp.Backoff(4))
	assert.Equal(t, 5*time.Second, rp.Backoff(40))
	assert.Equal(t, workload.DefaultInitialBackoff, workload.RetryPolicy{}.Backoff(1))
}

func TestTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{&sandbox.APIError{StatusCode: 429}, true},
		{&sandbox.APIError{StatusCode: 500}, true},
		{&sandbox.APIError{StatusCode: 404}, false},
		{&sandbox.APIError{StatusCode: 422}, false},
		{&sandbox.OutcomeUnknownError{Op: "create sandbox", Err: errors.New("reset")}, true},
		{&sandbox.InputError{Field: "VCPUs"}, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{nil, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, workload.Transient(c.err), "%v", c.err)
	}
}
