package sandbox_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestAutoResumeAfterServerStop(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var events []sandbox.ResumeEvent
	e := newEnv(t)
	e.c = e.srv.Client(sandbox.WithOnResume(func(ev sandbox.ResumeEvent) {
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	sb := e.create("auto")
	old := sb.SessionID()
	require.NoError(t, e.srv.Stop(old))

	res, err := sb.Command("echo", "hi").Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(res.Stdout))
	assert.NotEqual(t, old, sb.SessionID())
	assert.Equal(t, sb.SessionID(), res.SessionID)
	assert.Equal(t, sandbox.StatusRunning, sb.Session().Status)

	require.Len(t, resumeRequests(e.srv), 1)
	assert.Equal(t, 1, e.srv.CommandCount(), "the command ran once")
	cmds := requests(e.srv, http.MethodPost, "/cmd")
	require.Len(t, cmds, 2, "refused on the old session, run on the new one")
	assert.Equal(t, http.StatusGone, cmds[0].Status)
	assert.Contains(t, cmds[0].Path, old)
	assert.Contains(t, cmds[1].Path, sb.SessionID())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 1)
	assert.Equal(t, sandbox.ResumeEvent{SandboxName: "auto", OldSessionID: old, NewSessionID: sb.SessionID()}, events[0])
}

func TestAutoResumeAfterStopSkipsTheRefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("known")
	old := sb.SessionID()
	_, err := sb.Stop(t.Context())
	require.NoError(t, err)

	// The handle knows its session stopped: it resumes before sending.
	res, err := sb.Command("echo", "again").Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "again\n", string(res.Stdout))
	assert.NotEqual(t, old, sb.SessionID())
	assert.Len(t, resumeRequests(e.srv), 1)
	assert.Len(t, requests(e.srv, http.MethodPost, "/cmd"), 1)
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestFilesSurviveResume(t *testing.T) {
	t.Parallel()
	t.Run("fs read", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		sb := e.create("keep")
		require.NoError(t, sb.FS().WriteFile(t.Context(), "state.txt", []byte("before stop"), 0o644))
		require.NoError(t, e.srv.Stop(sb.SessionID()))

		data, err := sb.FS().ReadFile(t.Context(), "state.txt")
		require.NoError(t, err)
		assert.Equal(t, "before stop", string(data))
		assert.Len(t, resumeRequests(e.srv), 1)
	})
	t.Run("local executor", func(t *testing.T) {
		t.Parallel()
		e := newLocalEnv(t)
		sb := e.create("keep")
		require.NoError(t, sb.FS().WriteFile(t.Context(), "state.txt", []byte("before stop"), 0o644))
		_, err := sb.Stop(t.Context())
		require.NoError(t, err)

		out, err := sb.Command("cat", "state.txt").Output(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "before stop", string(out))
		assert.Len(t, resumeRequests(e.srv), 1)
		host, err := e.srv.HostPath("keep", "state.txt")
		require.NoError(t, err)
		assert.Equal(t, filepath.Clean(sb.Cwd()), filepath.Dir(host))
	})
}

func TestConcurrentCallsShareOneResume(t *testing.T) {
	t.Parallel()
	const n = 10
	e := newEnv(t)
	var old string
	// Every call reaches the stopped session before any is refused; the
	// last refusal is held back until the others already run on the
	// resumed session, so it must not cause a resume of its own.
	var mu sync.Mutex
	arrived := 0
	all, moved := make(chan struct{}), make(chan struct{})
	var movedOnce sync.Once
	hold := func(r *http.Request, ch <-chan struct{}) {
		select {
		case <-ch:
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isCmdPost(r) {
			mu.Lock()
			stale := old != "" && strings.Contains(r.URL.Path, "/"+old+"/")
			mu.Unlock()
			if stale {
				mu.Lock()
				arrived++
				k := arrived
				if k == n {
					close(all)
				}
				mu.Unlock()
				hold(r, all)
				if k == n {
					hold(r, moved)
				}
			} else {
				movedOnce.Do(func() { close(moved) })
			}
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "herd"})
	require.NoError(t, err)
	mu.Lock()
	old = sb.SessionID()
	mu.Unlock()
	require.NoError(t, e.srv.Stop(old))

	var wg sync.WaitGroup
	errs := make([]error, n)
	sids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			res, err := sb.Command("echo", "x").Run(t.Context())
			errs[i] = err
			if res != nil {
				sids[i] = res.SessionID
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, sb.SessionID(), sids[i], "every call ran on the resumed session")
	}
	assert.NotEqual(t, old, sb.SessionID())
	assert.Len(t, resumeRequests(e.srv), 1, "one resume for all")
	assert.Equal(t, n, e.srv.CommandCount())
	assert.Len(t, e.srv.Sessions(), 2)
	assert.Len(t, requests(e.srv, http.MethodPost, "/"+old+"/cmd"), n)
}

func TestAutoResumeOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.srv.Client(sandbox.WithAutoResume(false))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "manual"})
	require.NoError(t, err)
	require.NoError(t, e.srv.Stop(sb.SessionID()))

	_, err = sb.Command("echo", "x").Run(t.Context())
	require.ErrorIs(t, err, sandbox.ErrGone)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusGone, ae.StatusCode)
	assert.Equal(t, sb.SessionID(), ae.SessionID)
	assert.Empty(t, resumeRequests(e.srv))
	assert.Zero(t, e.srv.CommandCount())

	// An explicit Resume still works.
	_, err = sb.Resume(t.Context())
	require.NoError(t, err)
	_, err = sb.Command("echo", "x").Run(t.Context())
	require.NoError(t, err)
}

func TestResumeWhileStopping(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithStopDelay(1500*time.Millisecond))
	sb := e.create("slow")
	old := sb.SessionID()

	// Another process stops the sandbox; the stop takes a while.
	stopped := make(chan error, 1)
	go func() {
		_, err := e.srv.Client().StopSession(t.Context(), old)
		stopped <- err
	}()
	require.Eventually(t, func() bool {
		s, _ := e.srv.Session(old)
		return s.Status == "stopping"
	}, 10*time.Second, time.Millisecond)

	res, err := sb.Command("echo", "after").Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "after\n", string(res.Stdout))
	assert.NotEqual(t, old, sb.SessionID())
	require.NoError(t, <-stopped)

	cmds := requests(e.srv, http.MethodPost, "/cmd")
	require.Len(t, cmds, 2)
	assert.Equal(t, http.StatusUnprocessableEntity, cmds[0].Status, "422 sandbox_stopping")
	assert.Len(t, resumeRequests(e.srv), 1)
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestStopDuringWorkThenResume(t *testing.T) {
	t.Parallel()
	// 410 in the middle of work: a detached command dies with the session,
	// the next call resumes.
	e := newEnv(t)
	e.handle("sleep", sandboxtest.Steps{}.Block())
	sb := e.create("mid")
	h, err := sb.Command("sleep", "1000").Start(t.Context())
	require.NoError(t, err)
	require.NoError(t, e.srv.Stop(sb.SessionID()))

	res, err := h.Wait(t.Context())
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.ErrorIs(t, err, sandbox.ErrGone, "hosted Vercel answers 410 for the commands of a stopped session")

	out, err := sb.Command("echo", "ok").Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(out))
}

// Hosted Vercel keeps nothing of a non-persistent sandbox: resuming it
// answers 400 snapshot_not_found, and GetOrCreate creates it again.
func TestResumeNonPersistentIsSnapshotNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := false
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "fleeting", Persistent: &no})
	require.NoError(t, err)
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)

	_, err = e.c.Resume(t.Context(), "fleeting")
	assert.ErrorIs(t, err, sandbox.ErrSnapshotNotFound, "typed: the sandbox cannot be resumed")
	assert.ErrorIs(t, err, sandbox.ErrBadRequest)

	again, err := e.c.GetOrCreate(t.Context(), sandbox.CreateParams{Name: "fleeting", Persistent: &no})
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusRunning, again.Session().Status)
	assert.NotEqual(t, sb.SessionID(), again.SessionID())
}

// When auto-resume fails, the resume's error is the one to act on: a
// call refused with 410 that cannot be resumed (400 snapshot_not_found,
// as hosted Vercel answers for a non-persistent sandbox) means "recreate
// the sandbox", so errors.As finds the 400 first. errors.Is still matches
// ErrGone: the session did stop.
func TestAutoResumeFailureComesFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	no := false
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "fleeting", Persistent: &no})
	require.NoError(t, err)
	old := sb.SessionID()
	require.NoError(t, e.srv.Stop(old)) // the handle still believes it runs

	_, err = sb.Command("echo", "hi").Run(t.Context())
	require.Error(t, err)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusBadRequest, ae.StatusCode, "the resume's refusal, not the 410 that led to it")
	assert.Equal(t, "snapshot_not_found", ae.Code)
	assert.ErrorIs(t, err, sandbox.ErrSnapshotNotFound, "the sandbox cannot be resumed: recreate it")
	assert.ErrorIs(t, err, sandbox.ErrGone, "the session did stop")
	assert.Equal(t, 0, e.srv.CommandCount(), "nothing ran")
	msg := err.Error()
	assert.Less(t, strings.Index(msg, "status 400"), strings.Index(msg, "status 410"), "the message leads with the resume's error: %s", msg)
	cmds := requests(e.srv, http.MethodPost, "/cmd")
	require.Len(t, cmds, 1)
	assert.Equal(t, http.StatusGone, cmds[0].Status)
}

// TestResumeEndsWithTheLastCallerWhoWantsIt: two calls share a resume that
// hangs; the first to give up leaves it running for the other, and when the
// second gives up too the resume request is cancelled before the call
// returns, so nothing of it outlives them. The next call resumes afresh.
func TestResumeEndsWithTheLastCallerWhoWantsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var held atomic.Int32
	hang := make(chan struct{})
	cancelled := make(chan struct{}, 4)
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodGet && r.URL.Query().Get("resume") == "true" && held.Add(1) == 1 {
			select {
			case <-hang:
			case <-r.Context().Done():
				cancelled <- struct{}{}
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "giving-up"})
	require.NoError(t, err)
	old := sb.SessionID()
	require.NoError(t, e.srv.Stop(old))
	require.NoError(t, sb.Refresh(t.Context()))

	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	errs := make(chan error, 2)
	go func() { _, err := sb.Command("true").Run(ctx1); errs <- err }()
	go func() { _, err := sb.Command("true").Run(ctx2); errs <- err }()
	require.Eventually(t, func() bool { return held.Load() == 1 }, 5*time.Second, time.Millisecond, "the resume is held")

	cancel1()
	require.ErrorIs(t, <-errs, context.Canceled)
	select {
	case <-cancelled:
		t.Fatal("the resume was cancelled while another call still waited for it")
	case <-time.After(50 * time.Millisecond):
	}
	cancel2()
	require.ErrorIs(t, <-errs, context.Canceled)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the resume request went on after every call gave up")
	}
	assert.Equal(t, old, sb.SessionID(), "nothing resumed")

	res, err := sb.Command("echo", "again").Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "again\n", string(res.Stdout))
	assert.NotEqual(t, old, sb.SessionID())
	assert.Equal(t, int32(2), held.Load(), "a fresh resume")
	close(hang)
}
