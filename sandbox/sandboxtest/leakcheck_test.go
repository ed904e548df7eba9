package sandboxtest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// tbRecorder is a testing.TB that records failures and cleanups instead
// of acting on them, so a test can observe a check failing.
type tbRecorder struct {
	testing.TB // the real test, for everything not overridden
	mu         sync.Mutex
	errs       []string
	cleanups   []func()
}

func (r *tbRecorder) Helper() {}

func (r *tbRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *tbRecorder) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *tbRecorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// finish runs the recorded cleanups, last registered first, as the
// testing package does, and returns the recorded failures.
func (r *tbRecorder) finish() []string {
	r.mu.Lock()
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errs
}

func hygieneCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAssertNoLeakedSandboxesPasses(t *testing.T) {
	t.Parallel()
	var elapsed atomic.Int64 // nanoseconds since start, on the server's clock
	start := time.UnixMilli(1767000000000)
	srv := sandboxtest.NewServer(t, local.WithClock(func() time.Time { return start.Add(time.Duration(elapsed.Load())) }))
	c := srv.Client()
	ctx := hygieneCtx(t)

	stopped, err := c.Create(ctx, sandbox.CreateParams{Name: "stopped"})
	require.NoError(t, err)
	_, err = stopped.Stop(ctx)
	require.NoError(t, err)
	deleted, err := c.Create(ctx, sandbox.CreateParams{Name: "deleted"})
	require.NoError(t, err)
	require.NoError(t, deleted.Delete(ctx, sandbox.DeleteParams{}))
	// A sandbox whose session ran out of time is not running any more.
	_, err = c.Create(ctx, sandbox.CreateParams{Name: "expired", Timeout: time.Minute})
	require.NoError(t, err)
	elapsed.Add(int64(2 * time.Minute))

	rec := &tbRecorder{TB: t}
	srv.AssertNoLeakedSandboxes(rec)
	assert.Empty(t, rec.finish())
	assert.Empty(t, srv.LeakedSandboxes())
}

func TestAssertNoLeakedSandboxesFails(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithSeed(7))
	c := srv.Client(sandbox.WithUserAgent("leaky-service/1.0"))
	ctx := hygieneCtx(t)

	named, err := c.Create(ctx, sandbox.CreateParams{Name: "leaky", Tags: map[string]string{"owner": "billing"}})
	require.NoError(t, err)
	unnamed, err := c.Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	// A resumed sandbox leaks too; its report lists both sessions.
	first := named.SessionID()
	_, err = named.Stop(ctx)
	require.NoError(t, err)
	_, err = named.Resume(ctx)
	require.NoError(t, err)
	stopped, err := c.Create(ctx, sandbox.CreateParams{Name: "tidy"})
	require.NoError(t, err)
	_, err = stopped.Stop(ctx)
	require.NoError(t, err)

	leaks := srv.LeakedSandboxes()
	require.Len(t, leaks, 2)
	assert.Equal(t, "leaky", leaks[0].Name)
	assert.Equal(t, named.SessionID(), leaks[0].SessionID)
	assert.Equal(t, "running", leaks[0].Status)
	assert.Equal(t, map[string]string{"owner": "billing"}, leaks[0].Tags)
	assert.Equal(t, []string{first + " (stopped)", named.SessionID() + " (running)"}, leaks[0].Sessions)
	assert.Contains(t, leaks[0].CreatedBy, "POST /v3/sandboxes")
	assert.Contains(t, leaks[0].CreatedBy, "leaky-service/1.0")
	assert.Equal(t, unnamed.Name(), leaks[1].Name)
	assert.Contains(t, leaks[1].CreatedBy, "POST /v3/sandboxes", "the client names every sandbox, so its creator is known")

	rec := &tbRecorder{TB: t}
	srv.AssertNoLeakedSandboxes(rec)
	errs := rec.finish()
	require.Len(t, errs, 1)
	msg := errs[0]
	assert.Contains(t, msg, "2 sandbox(es) left running")
	assert.Contains(t, msg, "leaky: session "+named.SessionID()+" running")
	assert.Contains(t, msg, "tags owner=billing")
	assert.Contains(t, msg, `leaky-service/1.0"`)
	assert.Contains(t, msg, unnamed.Name()+": session "+unnamed.SessionID())
	assert.NotContains(t, msg, "tidy")
}

func TestCheckLeaks(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, cleanUp bool) []string {
		rec := &tbRecorder{TB: t}
		srv := sandboxtest.NewServer(rec)
		srv.CheckLeaks()
		c := srv.Client()
		sb, err := c.Create(hygieneCtx(t), sandbox.CreateParams{Name: "checked"})
		require.NoError(t, err)
		if cleanUp {
			// A cleanup registered by the test runs before the check.
			rec.Cleanup(func() { assert.NoError(t, sb.Delete(context.Background(), sandbox.DeleteParams{})) })
		}
		errs := rec.finish() // the test ends: cleanups, the check, Close
		assert.Zero(t, srv.LiveGoroutines(), "the server was closed")
		return errs
	}
	t.Run("leak", func(t *testing.T) {
		errs := run(t, false)
		require.Len(t, errs, 1, "the check must run before Close stops every session")
		assert.Contains(t, errs[0], "checked: session")
	})
	t.Run("clean", func(t *testing.T) {
		assert.Empty(t, run(t, true))
	})
}

func TestLiveGoroutines(t *testing.T) {
	t.Parallel()
	srv, err := local.New(local.WithExecutor(hostexec.New()))
	require.NoError(t, err)
	rec := &tbRecorder{TB: t}
	srv2 := sandboxtest.NewServer(rec, local.WithExecutor(hostexec.New()))
	srv.Close() // never served: nothing to wait for
	assert.Zero(t, srv.LiveGoroutines())

	ctx := hygieneCtx(t)
	c := srv2.Client()
	sb, err := c.Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	assert.Zero(t, srv2.LiveGoroutines(), "nothing runs between requests")
	h, err := sb.Command("sleep", "60").Start(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, srv2.LiveGoroutines(), "one watcher for the running command")

	// A request in flight counts too: a wait on the running command.
	waited := make(chan error, 1)
	go func() {
		_, err := h.Wait(ctx)
		waited <- err
	}()
	require.Eventually(t, func() bool { return srv2.LiveGoroutines() == 2 }, 5*time.Second, 5*time.Millisecond)

	require.NoError(t, h.Kill(ctx))
	assert.Error(t, <-waited, "a killed command exits non-zero")
	require.Eventually(t, func() bool { return srv2.LiveGoroutines() == 0 }, 5*time.Second, 5*time.Millisecond)

	// Close ends everything, including a command still running.
	_, err = sb.Command("sleep", "60").Start(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, srv2.LiveGoroutines())
	assert.Empty(t, rec.finish()) // closes srv2
	assert.Zero(t, srv2.LiveGoroutines(), "Close left background work running")
}
