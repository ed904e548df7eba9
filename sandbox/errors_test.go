package sandbox_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestNotFoundError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.c.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	assert.NotErrorIs(t, err, sandbox.ErrGone)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.StatusCode)
	assert.Equal(t, "not_found", ae.Code)
	assert.NotEmpty(t, ae.Message)
	assert.Equal(t, http.MethodGet, ae.Method)
	assert.Equal(t, "/v2/sandboxes/missing", ae.Path)
	assert.Equal(t, "missing", ae.SandboxName)
	assert.NotEmpty(t, ae.RequestID, "X-Vercel-Id")
	assert.Equal(t, 1, ae.Attempts, "a 404 is not retried")
	assert.NotContains(t, err.Error(), e.srv.Token(), "no token in errors")
	assert.Len(t, e.srv.Requests(), 1)
}

func TestRetryThroughTransientFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("flaky")
	var n counter
	var mu sync.Mutex
	var retries []sandbox.RetryEvent
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodGet && n.inc(r.URL.Path) == 1 {
			writeAPIError(w, http.StatusServiceUnavailable, "unavailable", "try again")
			return
		}
		next.ServeHTTP(w, r)
	}, sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: 5e6, MaxDelay: 50e6, OnRetry: func(ev sandbox.RetryEvent) {
		mu.Lock()
		retries = append(retries, ev)
		mu.Unlock()
	}}))

	got, err := c.Get(t.Context(), "flaky")
	require.NoError(t, err)
	assert.Equal(t, sb.SessionID(), got.SessionID())
	assert.Equal(t, 2, n.get("/v2/sandboxes/flaky"), "one failure, one retry")
	assert.Len(t, requests(e.srv, http.MethodGet, "/v2/sandboxes/flaky"), 1, "only the retry reached the fake")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, retries, 1)
	assert.Equal(t, http.StatusServiceUnavailable, retries[0].StatusCode)
	assert.Equal(t, 2, retries[0].Attempt)
	assert.Equal(t, "/v2/sandboxes/flaky", retries[0].Path)
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n.inc("all")
		writeAPIError(w, http.StatusBadGateway, "bad_gateway", "upstream down")
	})
	_, err := c.Get(t.Context(), "any")
	require.ErrorIs(t, err, sandbox.ErrServer)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusBadGateway, ae.StatusCode)
	assert.Equal(t, 3, ae.Attempts)
	assert.Equal(t, 3, n.get("all"), "three attempts by default")
}

func TestRateLimitedWithLongRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n.inc("all")
		w.Header().Set("Retry-After", "60")
		writeAPIError(w, http.StatusTooManyRequests, "rate_limited", "The concurrency limit has been exceeded.")
	})
	_, err := c.Get(t.Context(), "any")
	require.ErrorIs(t, err, sandbox.ErrRateLimited)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, time.Minute, ae.RetryAfter)
	assert.Equal(t, 1, n.get("all"), "a Retry-After beyond the limit is not waited for")
}

func TestRunOutcomeUnknownIsNotResent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isCmdPost(r) && n.inc("cmd") == 1 {
			_, _ = io.Copy(io.Discard, r.Body)
			writeAPIError(w, http.StatusInternalServerError, "internal", "something broke")
			return
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "unsafe"})
	require.NoError(t, err)

	res, err := sb.Command("echo", "once").Run(t.Context())
	assert.Nil(t, res)
	require.ErrorIs(t, err, sandbox.ErrUnknownResult)
	var ou *sandbox.OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, sb.SessionID(), ou.SessionID)
	assert.Equal(t, "unsafe", ou.SandboxName)
	assert.Equal(t, http.MethodPost, ou.Method)
	assert.True(t, strings.HasSuffix(ou.Path, "/cmd"))
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae, "the 500 is kept")
	assert.Equal(t, http.StatusInternalServerError, ae.StatusCode)

	assert.Equal(t, 1, n.get("cmd"), "the client did not resend")
	assert.Zero(t, e.srv.CommandCount(), "nothing ran")

	// Start is just as careful.
	_, err = sb.Command("echo").Start(t.Context())
	require.NoError(t, err, "the proxy fails only the first command")
	assert.Equal(t, 2, n.get("cmd"))
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestCreateOutcomeUnknownFindsTheSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodPost && n.inc("create") == 1 {
			// The sandbox is created, but the answer is lost.
			rec := &discardWriter{h: http.Header{}}
			next.ServeHTTP(rec, r)
			writeAPIError(w, http.StatusBadGateway, "bad_gateway", "lost")
			return
		}
		next.ServeHTTP(w, r)
	}, sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond}))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "lost"})
	require.NoError(t, err, "the lookup finds what the lost create made")
	assert.Equal(t, "lost", sb.Name())
	assert.Equal(t, sandbox.StatusRunning, sb.Session().Status)
	assert.Equal(t, 1, n.get("create"), "the create was not sent twice")
	assert.Len(t, e.srv.Sandboxes(), 1, "never two sandboxes")
}

func TestCreateOutcomeStaysUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodPost {
			n.inc("create")
			writeAPIError(w, http.StatusBadGateway, "bad_gateway", "lost")
			return
		}
		if r.Method == http.MethodGet {
			writeAPIError(w, http.StatusForbidden, "forbidden", "no lookups")
			return
		}
		next.ServeHTTP(w, r)
	}, sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond}))
	_, err := c.Create(t.Context(), sandbox.CreateParams{Name: "lost"})
	var ou *sandbox.OutcomeUnknownError
	require.ErrorAs(t, err, &ou, "what may have been created is said, with its name")
	assert.Equal(t, "lost", ou.SandboxName)
	assert.Equal(t, 1, n.get("create"), "no create is resent before the name was looked up")
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

func TestWrongTokenIsForbidden(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithToken("right-token"))
	c := srv.Client(sandbox.WithToken("wrong-token"), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	_, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.ErrorIs(t, err, sandbox.ErrForbidden)
	assert.NotContains(t, err.Error(), "wrong-token")
	assert.NotContains(t, err.Error(), "right-token")
}

// Limits hosted Vercel enforces are checked before any request.
func TestHostedLimitsCheckedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	big := map[string]string{"BIG": strings.Repeat("x", 5000)}
	_, err := e.c.Create(t.Context(), sandbox.CreateParams{Env: big})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput, "env payload above 4 KB")
	hour := time.Hour
	_, err = e.c.Create(t.Context(), sandbox.CreateParams{SnapshotExpiration: &hour})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput, "snapshot expiration below a day")
	assert.Empty(t, e.srv.Requests(), "nothing was sent")

	sb := e.create("")
	cmd := sb.Command("echo")
	cmd.Env = big
	_, err = cmd.Run(t.Context())
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = sb.Snapshot(t.Context(), sandbox.SnapshotParams{Expiration: &hour})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Zero(t, e.srv.CommandCount())
}

// Hosted Vercel reports its rate limit on every answer and limits creates
// per window; a 429 asking for more than MaxRetryAfter (20 s by default)
// is returned at once, with the window on the APIError.
func TestCreateRateLimitWindow(t *testing.T) {
	t.Parallel()
	clock := authtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, local.WithClock(clock.Now), local.WithCreateRateLimit(2, time.Minute))
	e.create("")
	e.create("")
	_, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.ErrorIs(t, err, sandbox.ErrRateLimited)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	require.NotNil(t, ae.RateLimit)
	assert.Equal(t, 2, ae.RateLimit.Limit)
	assert.Equal(t, 0, ae.RateLimit.Remaining)
	assert.True(t, clock.Now().Add(time.Minute).Equal(ae.RateLimit.Reset), "the window's end")
	assert.Equal(t, time.Minute, ae.RetryAfter, "past the default cap: not waited for")
	assert.Equal(t, 1, ae.Attempts)

	clock.Advance(time.Minute)
	e.create("") // a new window
	assert.Len(t, e.srv.Sandboxes(), 3)
}

// A missing executable is no command at all on hosted Vercel: 400
// executable_not_found, no exit code. The friendly mode runs it as a shell
// would, with exit code 127.
func TestExecutableNotFound(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	sb := e.create("")
	res, err := sb.Command("no-such-executable-here").Run(t.Context())
	assert.Nil(t, res, "no invented exit code")
	assert.ErrorIs(t, err, sandbox.ErrExecutableNotFound)
	assert.ErrorIs(t, err, sandbox.ErrBadRequest)
	_, err = sb.Command("no-such-executable-here").Start(t.Context())
	assert.ErrorIs(t, err, sandbox.ErrExecutableNotFound)
	assert.Zero(t, e.srv.CommandCount(), "nothing ran")

	f := newLocalEnv(t, local.WithFriendly())
	res, err = f.create("").Command("no-such-executable-here").Run(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 127, res.ExitCode())
	assert.Contains(t, string(res.Stderr), "command not found")
}
