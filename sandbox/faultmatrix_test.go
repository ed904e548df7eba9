package sandbox_test

// The reliability fault matrix: every fault the fake can inject, against
// the real client. Each case checks the outcome and counts what the server
// executed, so that "no command ran twice" and "no output byte lost" are
// proven, not assumed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// cmdPattern matches the command endpoint of every session.
const cmdPattern = "/v2/sandboxes/sessions/*/cmd"

// jobSteps prints three lines; attached, its stream has five frames: the
// command, three output lines and the final command with its exit code.
var jobSteps = sandboxtest.Steps{}.Stdout("one\n").Stdout("two\n").Stdout("three\n").Exit(0)

// statuses returns the statuses of the recorded requests with this method
// whose path ends with suffix.
func statuses(srv *sandboxtest.Server, method, suffix string) []int {
	var out []int
	for _, r := range requests(srv, method, suffix) {
		out = append(out, r.Status)
	}
	return out
}

func TestFault503BurstOnGetIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("burst")
	h := e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", Status: 503, Times: 2})

	got, err := e.c.Get(t.Context(), "burst")
	require.NoError(t, err)
	assert.Equal(t, sb.SessionID(), got.SessionID())
	assert.Equal(t, 2, h.Hits())
	assert.Equal(t, []int{503, 503, 200}, statuses(e.srv, "GET", "/v2/sandboxes/burst"), "two failures, then the retry that worked")
}

func TestFaultRunCommand500IsNotResent(t *testing.T) {
	t.Parallel()
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "BeforeHandler", true: "AfterHandler"}[after]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.handle("job", jobSteps)
			sb := e.create("")
			e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Status: 500, Times: 1, AfterHandler: after})

			res, err := sb.Command("job").Run(t.Context())
			assert.Nil(t, res, "no invented result")
			var ou *sandbox.OutcomeUnknownError
			require.ErrorAs(t, err, &ou)
			assert.Equal(t, sb.SessionID(), ou.SessionID)
			assert.Equal(t, sb.Name(), ou.SandboxName)
			var ae *sandbox.APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, 500, ae.StatusCode)

			assert.Equal(t, []int{500}, statuses(e.srv, "POST", "/cmd"), "sent once, not re-sent")
			want := 0
			if after {
				want = 1 // it ran, once, though the client saw a 500
			}
			assert.Equal(t, want, e.srv.CommandCount())

			// Start (detached) is just as careful.
			e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Status: 502, Times: 1, AfterHandler: after})
			_, err = sb.Command("job").Start(t.Context())
			require.ErrorAs(t, err, &ou)
			assert.Len(t, requests(e.srv, "POST", "/cmd"), 2)
			assert.Equal(t, 2*want, e.srv.CommandCount())
		})
	}
}

func TestFaultResetBeforeAnswer(t *testing.T) {
	t.Parallel()
	t.Run("SafeGetIsRetried", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		sb := e.create("reset")
		h := e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/reset", Reset: fault.ResetBeforeHeaders, Times: 1})
		got, err := e.c.Get(t.Context(), "reset")
		require.NoError(t, err)
		assert.Equal(t, sb.SessionID(), got.SessionID())
		assert.Equal(t, 1, h.Hits())
		assert.Equal(t, []int{0, 200}, statuses(e.srv, "GET", "/v2/sandboxes/reset"), "the reset, then the retry")
	})
	for _, after := range []bool{false, true} {
		name := map[bool]string{false: "CommandBeforeHandler", true: "CommandAfterHandler"}[after]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.handle("job", jobSteps)
			sb := e.create("")
			e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Reset: fault.ResetBeforeHeaders, Times: 1, AfterHandler: after})
			res, err := sb.Command("job").Run(t.Context())
			assert.Nil(t, res)
			var ou *sandbox.OutcomeUnknownError
			require.ErrorAs(t, err, &ou, "a reset leaves the outcome open")
			assert.Equal(t, sb.SessionID(), ou.SessionID)
			assert.Equal(t, []int{0}, statuses(e.srv, "POST", "/cmd"), "not re-sent")
			assert.Equal(t, map[bool]int{false: 0, true: 1}[after], e.srv.CommandCount())
		})
	}
}

func TestFaultRateLimitShortRetryAfterWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("patient")
	f := fault.RateLimit(1, time.Second)
	f.Method = "GET"
	e.srv.Inject(f)

	start := time.Now()
	_, err := e.c.Get(t.Context(), "patient")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After: 1 was honoured")
	assert.Equal(t, []int{429, 200}, statuses(e.srv, "GET", "/v2/sandboxes/patient"))
}

func TestFaultRateLimitLongRetryAfterFailsFast(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("hurried")
	f := fault.RateLimit(1, time.Minute)
	f.Method = "GET"
	e.srv.Inject(f)

	start := time.Now()
	_, err := e.c.Get(t.Context(), "hurried")
	require.ErrorIs(t, err, sandbox.ErrRateLimited)
	assert.Less(t, time.Since(start), 10*time.Second, "no 60 s wait")
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, time.Minute, ae.RetryAfter)
	assert.Equal(t, []int{429}, statuses(e.srv, "GET", "/v2/sandboxes/hurried"))
}

func TestFaultResetMidStreamReattaches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", jobSteps)
	var events []sandbox.ReattachEvent
	c := e.srv.Client(sandbox.WithReattachPolicy(sandbox.ReattachPolicy{OnReattach: func(ev sandbox.ReattachEvent) { events = append(events, ev) }}))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	// The command line and two output lines, then a TCP reset.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Reset: fault.ResetAfterHeaders, AfterFrames: 3})

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode(), "the real exit code, read after re-attaching")
	assert.Equal(t, "one\ntwo\nthree\n", out.String(), "every byte once: the replay skips what arrived")
	assert.Equal(t, "one\ntwo\nthree\n", string(res.Stdout))
	assert.Equal(t, 1, e.srv.CommandCount(), "a broken stream is never re-run")
	assert.Len(t, requests(e.srv, "POST", "/cmd"), 1)
	require.Len(t, events, 1)
	assert.Equal(t, "run", events[0].Op)
	assert.EqualValues(t, len("one\ntwo\n"), events[0].Delivered)
	assert.ErrorIs(t, events[0].Err, sandbox.ErrStreamEnded)
}

func TestFaultResetMidStreamWithoutReattach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", jobSteps)
	sb, err := e.srv.Client(noReattach).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Reset: fault.ResetAfterHeaders, AfterFrames: 3})

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	res, err := cmd.Run(t.Context())
	require.NotNil(t, res, "the output so far travels with the error")
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.Equal(t, "one\ntwo\n", string(res.Stdout))
	var se *sandbox.StreamError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, sandbox.ErrStreamEnded)
	assert.Equal(t, sb.SessionID(), se.SessionID)
	assert.Equal(t, e.srv.Commands()[0].Command.ID, se.CommandID, "enough to reattach")
	var ee *command.ExitError
	assert.NotErrorAs(t, err, &ee)
	assert.Equal(t, "one\ntwo\n", out.String(), "what arrived was delivered")
	assert.Equal(t, 1, e.srv.CommandCount(), "a broken stream is not replayed")

	// Nothing is lost: the logs replay the whole output.
	h, err := sb.Attach(se.CommandID)
	require.NoError(t, err)
	stdout, err := h.Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", string(stdout))
}

func TestFaultStreamCutBeforeFinalFrame(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", jobSteps)
	sb := e.create("")
	// Every frame but the final one, ended cleanly.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Cut: true, AfterFrames: 4})

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	assert.Equal(t, "one\ntwo\nthree\n", out.String(), "nothing delivered twice")
	assert.Equal(t, 1, e.srv.CommandCount())
	assert.Len(t, requests(e.srv, "POST", "/cmd"), 1)
	assert.Len(t, requests(e.srv, "GET", "/logs"), 2, "one re-attachment, and a reading that confirms the output complete")
}

func TestFaultLogStreamCutWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	e.handle("job", sandboxtest.Steps{}.Stdout("a\n").Stdout("b\n").Await(release).Stdout("c\n").Exit(0))
	sb := e.create("")
	h, err := sb.Command("job").Start(t.Context())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		out, _, _ := e.srv.Output(h.ID())
		return out == "a\nb\n"
	}, 10*time.Second, 5*time.Millisecond)
	e.srv.Inject(fault.Fault{Method: "GET", Path: cmdPattern + "/*/logs", Cut: true, AfterFrames: 1, Times: 1})

	var got []string
	for ev, err := range h.Logs(t.Context()) {
		require.NoError(t, err)
		got = append(got, string(ev.Data))
		if string(ev.Data) == "b\n" {
			close(release)
		}
	}
	assert.Equal(t, []string{"a\n", "b\n", "c\n"}, got, "each frame once, across the cut")
	assert.Len(t, requests(e.srv, "GET", "/logs"), 3, "re-attached once, then a reading that confirms the output complete")
	r, err := h.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, r.ExitCode())
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestFaultStalledBodyFiresInactivityTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", jobSteps)
	sb := e.create("")
	// The command finishes at once, but its stream stalls after the first
	// output line.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Stall: time.Hour, AfterFrames: 2})

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	cmd.InactivityTimeout = 300 * time.Millisecond
	start := time.Now()
	res, err := cmd.Run(t.Context())
	assert.Less(t, time.Since(start), 10*time.Second)
	require.ErrorIs(t, err, command.ErrInactivity)
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 300*time.Millisecond, ie.Silence)
	assert.Equal(t, sb.SessionID(), ie.SessionID)
	require.NotNil(t, ie.Result)
	assert.Same(t, ie.Result, res, "the partial result, returned too")
	assert.Equal(t, -1, res.ExitCode())
	assert.Equal(t, "one\n", string(ie.Result.Stdout))
	assert.Equal(t, "one\n", out.String())
	assert.Equal(t, 1, e.srv.CommandCount())
	assert.Len(t, requests(e.srv, "POST", "/cmd"), 1)
}

func TestFaultGoneBeforeSafeCallResumesAndReplaysOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("expiring")
	first := sb.SessionID()
	h := e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/fs/mkdir", Expire: true, Times: 1})

	require.NoError(t, sb.FS().Mkdir(t.Context(), "/vercel/sandbox/out", 0o755))
	assert.Equal(t, 1, h.Hits())
	assert.NotEqual(t, first, sb.SessionID(), "resumed in a new session")
	assert.Equal(t, []int{410, 200}, statuses(e.srv, "POST", "/fs/mkdir"), "one refusal, one replay")
	assert.Len(t, resumeRequests(e.srv), 1)
	assert.Len(t, e.srv.Sessions(), 2)
}

func TestFaultGoneBeforeCommandStartReplaysOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("")
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Expire: true, Times: 1})

	// The 410 is a refusal: nothing ran, so the command is sent again, once.
	out, err := sb.Command("echo", "hi").Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(out))
	assert.Equal(t, []int{410, 200}, statuses(e.srv, "POST", "/cmd"))
	assert.Equal(t, 1, e.srv.CommandCount(), "ran once")
	assert.Equal(t, sb.SessionID(), e.srv.Commands()[0].Command.SessionID)
}

func TestFaultGoneDuringStreamIsNotReplayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", sandboxtest.Steps{}.Stdout("working\n").Block())
	sb := e.create("")
	sid := sb.SessionID()
	ch := newChunks()
	cmd := sb.Command("job")
	cmd.Stdout = ch.writer("stdout")
	done := make(chan error, 1)
	go func() {
		_, err := cmd.Run(t.Context())
		done <- err
	}()
	waitFor(t, ch.first, "the first output")
	require.NoError(t, e.srv.ExpireSession(sid))

	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the session ended")
	}
	// The command died with its session: the client reports how it ended
	// (killed, or a stream cut short), never a replayed run.
	var ee *command.ExitError
	var se *sandbox.StreamError
	require.True(t, errors.As(err, &ee) || errors.As(err, &se), "%v", err)
	if ee != nil {
		assert.NotZero(t, ee.Result.ExitCode())
	}
	assert.Equal(t, 1, e.srv.CommandCount(), "not replayed")
	assert.Len(t, requests(e.srv, "POST", "/cmd"), 1)
	assert.Equal(t, sid, sb.SessionID(), "no resume for a broken stream")
	assert.Empty(t, resumeRequests(e.srv))
}

func TestFaultMalformedJSONIsDecodeError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("garbled")
	e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/garbled", Body: `{"sandbox":{"name":`, Times: 1})
	_, err := e.c.Get(t.Context(), "garbled")
	require.ErrorIs(t, err, sandbox.ErrDecode)
	var de *sandbox.DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 200, de.StatusCode)
	assert.Len(t, requests(e.srv, "GET", "/v2/sandboxes/garbled"), 1)

	// On a command start, the command ran but its id is lost; the call is
	// not repeated.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Body: `{"command":{"id":`, AfterHandler: true, Times: 1})
	_, err = sb.Command("echo", "x").Start(t.Context())
	require.ErrorIs(t, err, sandbox.ErrDecode)
	assert.Equal(t, 1, e.srv.CommandCount())
	assert.Len(t, requests(e.srv, "POST", "/cmd"), 1)
}

func TestFaultTenMiBLineDeliveredWhole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pat := []byte("0123456789abcdef\"\\<>&é\t")
	line := append(bytes.Repeat(pat, 10<<20/len(pat)+1), '\n') // a little over 10 MiB
	e.handle("big", sandboxtest.Steps{}.Stdout("before\n").Stdout(string(line)).Stdout("after\n").Exit(0))
	sb := e.create("")
	// A short stall and latency on the way do not change the bytes.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Stall: 50 * time.Millisecond, AfterFrames: 2, Times: 1})

	var out bytes.Buffer
	cmd := sb.Command("big")
	cmd.Stdout = &out
	cmd.CaptureLimit = -1
	_, err := cmd.Run(t.Context())
	require.NoError(t, err)
	want := append(append([]byte("before\n"), line...), "after\n"...)
	require.Equal(t, len(want), out.Len())
	assert.True(t, bytes.Equal(want, out.Bytes()), "byte for byte")
	assert.Equal(t, 1, e.srv.CommandCount())

	// And through the log replay, behind latency.
	e.srv.Inject(fault.Fault{Method: "GET", Path: cmdPattern + "/*/logs", Latency: 50 * time.Millisecond, Times: 1})
	h, err := sb.Attach(e.srv.Commands()[0].Command.ID)
	require.NoError(t, err)
	var replay bytes.Buffer
	require.NoError(t, h.CopyOutput(t.Context(), &replay, nil))
	assert.True(t, bytes.Equal(want, replay.Bytes()), "replayed byte for byte (%d bytes, want %d)", replay.Len(), len(want))
}

func TestFaultTokenExpiresDuringLongRun(t *testing.T) {
	t.Parallel()
	clock := authtest.NewClock(time.Now())
	var minted atomic.Int32
	mint := func() string {
		minted.Add(1)
		return authtest.Token(local.TeamID, local.ProjectID, clock.Now().Add(15*time.Minute))
	}
	initial := mint()
	provider := auth.NewOIDCProvider(auth.OIDCOptions{
		Source: func(context.Context) (string, bool, error) { return initial, true, nil },
		Refresher: auth.RefresherFunc(func(context.Context, auth.Target) (string, error) {
			return mint(), nil
		}),
		Clock: clock,
	})
	var mu sync.Mutex
	var seen []string // the bearer token of every attempt, in order
	record := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
		mu.Unlock()
		return next(req)
	}

	// The fake accepts any bearer token, as it does by default.
	e := newEnv(t)
	release := make(chan struct{})
	e.handle("train", sandboxtest.Steps{}.Stdout("epoch 1\n").Await(release).Stdout("epoch 2\n").Exit(0))
	c := e.srv.Client(sandbox.WithCredentials(provider), sandbox.WithMiddleware(record))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	h, err := sb.Command("train").Start(t.Context())
	require.NoError(t, err)

	// An hour passes: the token the run started with has expired.
	clock.Advance(time.Hour)
	close(release)
	res, err := h.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	stdout, err := h.Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "epoch 1\nepoch 2\n", string(stdout))

	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(seen), 4)
	assert.Equal(t, initial, seen[0], "the first calls use the initial token")
	last := seen[len(seen)-1]
	assert.NotEqual(t, initial, last, "the later calls use a refreshed one")
	assert.Equal(t, int32(2), minted.Load(), "refreshed once")
	for _, r := range e.srv.Requests() {
		assert.Less(t, r.Status, 300, "no failed call: %s %s", r.Method, r.Path)
		assert.Equal(t, "Bearer [REDACTED]", r.Header.Get("Authorization"))
	}
	assert.Equal(t, 1, e.srv.CommandCount())
}

// cancelWithin fails the test unless call returns within a generous bound
// after ctx is cancelled, and returns its error.
func cancelWithin(t *testing.T, cancelAfter time.Duration, call func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	if cancelAfter >= 0 {
		time.Sleep(cancelAfter)
		cancel()
	}
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return after its context was cancelled")
		return nil
	}
}

// infiniteReader produces bytes until its context ends.
type infiniteReader struct{ read atomic.Int64 }

func (r *infiniteReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i)
	}
	r.read.Add(int64(len(p)))
	return len(p), nil
}

func TestFaultCancelAtEveryPhase(t *testing.T) {
	t.Parallel()

	t.Run("BeforeSend", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		sb := e.create("")
		before := len(e.srv.Requests())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := sb.Command("echo", "x").Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, e.srv.Requests(), before, "nothing was sent")
		assert.Zero(t, e.srv.CommandCount())
	})

	t.Run("WaitingForHeaders", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.create("slow")
		e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/slow", Latency: time.Hour})
		err := cancelWithin(t, 100*time.Millisecond, func(ctx context.Context) error {
			_, err := e.c.Get(ctx, "slow")
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Len(t, requests(e.srv, "GET", "/v2/sandboxes/slow"), 1, "not retried after the cancel")
	})

	t.Run("DuringUpload", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		sb := e.create("")
		// The server holds the request without reading its body, so the
		// upload blocks once the socket buffers are full.
		e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/fs/write", Latency: time.Hour})
		src := &infiniteReader{}
		err := cancelWithin(t, 200*time.Millisecond, func(ctx context.Context) error {
			return sb.FS().WriteFiles(ctx, []files.Entry{files.FromReader("big.bin", io.LimitReader(src, 1<<40), 1<<40)}, files.WriteParams{})
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Positive(t, src.read.Load(), "the upload had begun")
		assert.Len(t, requests(e.srv, "POST", "/fs/write"), 1)
	})

	t.Run("DuringStream", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.handle("job", sandboxtest.Steps{}.Stdout("tick\n").Block())
		sb := e.create("")
		ch := newChunks()
		cmd := sb.Command("job")
		cmd.Stdout = ch.writer("stdout")
		err := cancelWithin(t, -1, func(ctx context.Context) error {
			ctx, cancel := context.WithCancel(ctx)
			go func() { <-ch.first; cancel() }()
			_, err := cmd.Run(ctx)
			cancel()
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, e.srv.CommandCount())
	})

	t.Run("DuringWait", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.handle("job", sandboxtest.Steps{}.Block())
		sb := e.create("")
		h, err := sb.Command("job").Start(t.Context())
		require.NoError(t, err)
		err = cancelWithin(t, 100*time.Millisecond, func(ctx context.Context) error {
			_, err := h.Wait(ctx)
			return err
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.False(t, errors.Is(err, sandbox.ErrStreamEnded))
		assert.Equal(t, 1, e.srv.CommandCount())
	})
}

// A 10-minute command through a 6-minute edge: the stream is cut once,
// the client re-attaches through the logs, every byte arrives once and the
// command runs once (see longcommand_test.go).
func TestFault10MinuteCommandThrough6MinuteEdge(t *testing.T) {
	t.Parallel()
	runThroughEdge(t, 10)
}

// A stream cut cleanly 0–3 s before its command ends. The edge ends a
// stream as if it were complete (no final frame), and the command ends a
// moment later: before the client sees the cut, at the client's first,
// second or third request after it (the third comes once the client's
// two-second grace for a server that closes a stream before it records
// the exit is over). The command prints 40 numbered lines and its stream
// is cut after the 20th; every call delivers each line once, or fails with
// a typed error, and never returns half the output as a success.
func TestFaultStreamCutCleanlyNearTheEnd(t *testing.T) {
	t.Parallel()
	ends := []struct {
		name  string
		after int // the request after the cut at which the command ends
	}{{"BeforeTheCutIsSeen", 0}, {"AtTheFirstCheck", 1}, {"DuringTheGrace", 2}, {"AfterTheGrace", 3}}
	calls := []struct {
		name string
		run  func(ctx context.Context, e *env, sb *sandbox.Sandbox, attach bool) (string, error)
	}{
		{"Run", runNumbered},
		{"Logs", detachedNumbered(func(ctx context.Context, h *command.Handle) (string, error) {
			var out bytes.Buffer
			for ev, err := range h.Logs(ctx) {
				if err != nil {
					return out.String(), err
				}
				out.Write(ev.Data)
			}
			return out.String(), nil
		})},
		{"CopyOutput", detachedNumbered(func(ctx context.Context, h *command.Handle) (string, error) {
			var out bytes.Buffer
			err := h.CopyOutput(ctx, &out, nil)
			return out.String(), err
		})},
		{"Output", detachedNumbered(func(ctx context.Context, h *command.Handle) (string, error) {
			out, err := h.Output(ctx)
			return string(out), err
		})},
	}
	for _, end := range ends {
		for _, call := range calls {
			for _, attach := range []bool{false, true} {
				if call.name == "Run" && attach {
					continue
				}
				name := end.name + "/" + call.name
				if call.name != "Run" {
					name += map[bool]string{false: "/Started", true: "/Attached"}[attach]
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					x := &endAfterCut{after: end.after, release: make(chan struct{})}
					e := newEnv(t, local.WithMiddleware(x.middleware))
					e.handle("count", numberedSteps(x.release))
					sb := e.create("")
					if call.name == "Run" {
						e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Cut: true, AfterFrames: 21, Times: 1})
					}
					cut := e.srv.Inject(fault.Fault{Method: "GET", Path: cmdPattern + "/*/logs", Cut: true, AfterFrames: 20, Times: 1})

					got, err := call.run(ctxTimeout(t, time.Minute), e, sb, attach)
					require.NoError(t, err)
					assert.Equal(t, numbered(40), got, "every line once")
					assert.Equal(t, 1, cut.Hits(), "the log stream was cut")
					assert.True(t, x.ended(), "the command ended where the row says")
					assert.Equal(t, 1, e.srv.CommandCount())
				})
			}
		}
	}
}

// numbered returns lines 1 to n, numbered.
func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %02d\n", i)
	}
	return b.String()
}

// numberedSteps prints lines 1 to 21, waits for release, then prints
// lines 22 to 40 and exits: a stream cut after 20 lines ends when the
// 21st is written, while the command runs.
func numberedSteps(release <-chan struct{}) sandboxtest.Steps {
	var s sandboxtest.Steps
	for i := 1; i <= 40; i++ {
		if i == 22 {
			s = s.Await(release)
		}
		s = s.Stdout(fmt.Sprintf("line %02d\n", i))
	}
	return s.Exit(0)
}

// runNumbered runs the numbered command attached.
func runNumbered(ctx context.Context, e *env, sb *sandbox.Sandbox, _ bool) (string, error) {
	var out bytes.Buffer
	cmd := sb.Command("count")
	cmd.Stdout = &out
	res, err := cmd.Run(ctx)
	if err == nil && string(res.Stdout) != out.String() {
		return "", fmt.Errorf("captured %q, written %q", res.Stdout, out.String())
	}
	return out.String(), err
}

// detachedNumbered starts the numbered command detached and reads its
// output through read, on the handle Start gave or on one from
// Client.Attach.
func detachedNumbered(read func(context.Context, *command.Handle) (string, error)) func(context.Context, *env, *sandbox.Sandbox, bool) (string, error) {
	return func(ctx context.Context, e *env, sb *sandbox.Sandbox, attach bool) (string, error) {
		h, err := sb.Command("count").Start(ctx)
		if err != nil {
			return "", err
		}
		if attach {
			if h, err = e.c.Attach(h.Ref()); err != nil {
				return "", err
			}
		}
		return read(ctx, h)
	}
}

// endAfterCut ends the numbered command at a chosen request: the first
// log request is the one cut; the command ends just before it is served
// (after 0) or just before the after-th request that follows it is.
type endAfterCut struct {
	after   int
	release chan struct{}

	mu    sync.Mutex
	armed bool // the cut log request has come
	seen  int  // requests since
	fired bool
}

func (x *endAfterCut) middleware(s *local.Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if x.due(r) {
			close(x.release)
			// Serve the request only once the server has recorded the exit.
			for !allDone(s) && r.Context().Err() == nil {
				time.Sleep(time.Millisecond)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// due reports whether the command is to end before r is served.
func (x *endAfterCut) due(r *http.Request) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.fired {
		return false
	}
	if !x.armed {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/logs") {
			return false
		}
		x.armed = true
	} else {
		x.seen++
	}
	x.fired = x.seen == x.after
	return x.fired
}

func (x *endAfterCut) ended() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.fired
}

// allDone reports whether every command of s has finished.
func allDone(s *local.Server) bool {
	for _, c := range s.Commands() {
		if c.Command.ExitCode == nil {
			return false
		}
	}
	return true
}

// TestFaultReplayOfFinishedOutputCutCleanly is the matrix row of a log
// replay cut cleanly after the command has finished and the handle knows
// it (Wait, then Output: the common detached pattern). The logs endpoint
// has no final frame, so only a confirming reading tells the cut from the
// end: every line once, at whatever frame the cut falls.
func TestFaultReplayOfFinishedOutputCutCleanly(t *testing.T) {
	t.Parallel()
	reads := []struct {
		name string
		read func(ctx context.Context, h *command.Handle) (string, error)
	}{
		{"Logs", func(ctx context.Context, h *command.Handle) (string, error) {
			var out bytes.Buffer
			for ev, err := range h.Logs(ctx) {
				if err != nil {
					return out.String(), err
				}
				out.Write(ev.Data)
			}
			return out.String(), nil
		}},
		{"CopyOutput", func(ctx context.Context, h *command.Handle) (string, error) {
			var out bytes.Buffer
			err := h.CopyOutput(ctx, &out, nil)
			return out.String(), err
		}},
		{"Output", func(ctx context.Context, h *command.Handle) (string, error) {
			out, err := h.Output(ctx)
			return string(out), err
		}},
	}
	for _, after := range []int{0, 1, 20, 39} {
		for _, r := range reads {
			for _, attach := range []bool{false, true} {
				name := fmt.Sprintf("After%d/%s/%s", after, r.name, map[bool]string{false: "Started", true: "Attached"}[attach])
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					ctx := ctxTimeout(t, time.Minute)
					e := newEnv(t)
					done := make(chan struct{})
					close(done)
					e.handle("count", numberedSteps(done))
					sb := e.create("")
					h, err := sb.Command("count").Start(ctx)
					require.NoError(t, err)
					_, err = h.Wait(ctx)
					require.NoError(t, err)
					if attach {
						// A handle from another process learns that the
						// command finished from Info.
						h, err = e.c.Attach(h.Ref())
						require.NoError(t, err)
						info, err := h.Info(ctx)
						require.NoError(t, err)
						require.True(t, info.Done())
					}
					cut := e.srv.Inject(fault.Fault{Method: "GET", Path: cmdPattern + "/*/logs", Cut: true, AfterFrames: after, Times: 1})

					got, err := r.read(ctx, h)
					require.NoError(t, err)
					assert.Equal(t, numbered(40), got, "every line once")
					assert.Equal(t, 1, cut.Hits(), "the log stream was cut")
					assert.Equal(t, 1, e.srv.CommandCount())
				})
			}
		}
	}
}
