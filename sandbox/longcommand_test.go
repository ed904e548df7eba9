package sandbox_test

// Commands longer than hosted Vercel's edge lets a stream live. The fake
// cuts every stream after six minutes of its own clock, as hosted Vercel
// does; the handlers below move that clock a minute per line, so a
// 20-minute command takes milliseconds.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// longEnv is a fake on a fake clock, with a client that records its
// re-attachments and counts the waits the fake receives.
type longEnv struct {
	*env
	clock  *authtest.Clock
	mu     sync.Mutex
	events []sandbox.ReattachEvent
	waits  atomic.Int32
}

func newLongEnv(t *testing.T) *longEnv {
	t.Helper()
	le := &longEnv{clock: authtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	countWaits := local.WithMiddleware(func(_ *local.Server, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("wait") == "true" {
				le.waits.Add(1)
			}
			next.ServeHTTP(w, r)
		})
	})
	le.env = newEnv(t, local.WithClock(le.clock.Now), countWaits)
	le.c = le.srv.Client(sandbox.WithReattachPolicy(sandbox.ReattachPolicy{OnReattach: func(ev sandbox.ReattachEvent) {
		le.mu.Lock()
		le.events = append(le.events, ev)
		le.mu.Unlock()
	}}))
	return le
}

// create creates a sandbox whose session outlives the command.
func (le *longEnv) create() *sandbox.Sandbox {
	le.t.Helper()
	sb, err := le.c.Create(le.t.Context(), sandbox.CreateParams{Timeout: time.Hour})
	require.NoError(le.t, err)
	return sb
}

func (le *longEnv) reattachments() []sandbox.ReattachEvent {
	le.mu.Lock()
	defer le.mu.Unlock()
	return append([]sandbox.ReattachEvent(nil), le.events...)
}

// minuteLines is the output of a command of n minutes: one line a minute.
func minuteLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "minute %d\n", i)
	}
	return b.String()
}

// longJob plays a command of n minutes: each minute it waits until
// before(i) lets it go on, moves the clock, prints a line, then waits until
// after(i) lets it go on. It exits with 3.
func (le *longEnv) longJob(n int, before, after func(ctx context.Context, i int) bool) sandboxtest.Handler {
	return sandboxtest.HandlerFunc(func(ctx context.Context, cmd *local.Cmd, _ <-chan int) int {
		for i := 1; i <= n; i++ {
			if !before(ctx, i) {
				return 137
			}
			le.clock.Advance(time.Minute)
			fmt.Fprintf(cmd.Stdout, "minute %d\n", i)
			if i%4 == 0 {
				fmt.Fprintf(cmd.Stderr, "progress %d\n", i)
			}
			if !after(ctx, i) {
				return 137
			}
		}
		return 3
	})
}

// ackWriter tells a running job that a line has reached the caller.
type ackWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
}

func newAckWriter() *ackWriter { return &ackWriter{seen: make(chan struct{}, 64)} }

func (w *ackWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for range bytes.Count(p, []byte("\n")) {
		w.seen <- struct{}{}
	}
	return len(p), nil
}

func (w *ackWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// afterAck lets the job go on once the caller has its line.
func (w *ackWriter) afterAck(ctx context.Context, _ int) bool {
	select {
	case <-w.seen:
		return true
	case <-ctx.Done():
		return false
	}
}

func goOn(context.Context, int) bool { return true }

// runThroughEdge runs a command of n minutes attached and checks that it
// returns its exit code and every output byte once, having run once.
func runThroughEdge(t *testing.T, n int) {
	le := newLongEnv(t)
	out := newAckWriter()
	le.handle("agent", le.longJob(n, goOn, out.afterAck))
	sb := le.create()

	var stderr bytes.Buffer
	cmd := sb.Command("agent")
	cmd.Stdout = out
	cmd.Stderr = &stderr
	res, err := cmd.Run(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee, "the command's own exit code, not a stream error")
	assert.Equal(t, 3, res.ExitCode())
	assert.Equal(t, minuteLines(n), out.String(), "every byte once, in order")
	assert.Equal(t, minuteLines(n), string(res.Stdout))
	assert.Equal(t, strings.Count(stderr.String(), "progress"), n/4, "stderr too")
	assert.Equal(t, 1, le.srv.CommandCount(), "the command ran once")
	cuts := (n - 1) / 6
	events := le.reattachments()
	require.Len(t, events, cuts, "one re-attachment per cut, every six minutes")
	for i, ev := range events {
		assert.Equal(t, "run", ev.Op)
		assert.Equal(t, i+1, ev.Attempt)
		assert.ErrorIs(t, ev.Err, sandbox.ErrStreamEnded)
	}
	// Each cut is followed through the logs; the last reading confirms,
	// once the command has ended, that the output is complete.
	assert.Len(t, requests(le.srv, "GET", "/logs"), cuts+1)
}

func TestLongCommandAttachedThroughEdgeCuts(t *testing.T) {
	t.Parallel()
	runThroughEdge(t, 20)
}

func TestLongCommandDetachedWaitThroughEdgeCuts(t *testing.T) {
	t.Parallel()
	le := newLongEnv(t)
	// Every six minutes the edge cuts the wait; the job goes on once the
	// client has waited again.
	le.handle("agent", le.longJob(20, func(ctx context.Context, i int) bool {
		want := int32((i-1)/6 + 1)
		for le.waits.Load() < want {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(time.Millisecond):
			}
		}
		return true
	}, goOn))
	sb := le.create()
	cmd := sb.Command("agent")
	cmd.CaptureLimit = -1 // Wait keeps no output: it only waits
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)

	res, err := h.Wait(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, res.ExitCode())
	assert.GreaterOrEqual(t, le.waits.Load(), int32(4), "cut at 6, 12 and 18 minutes, then the answer")
	// The HTTP retries mend most cuts; a re-wait mends the rest.
	for _, ev := range le.reattachments() {
		assert.Equal(t, "wait", ev.Op)
	}

	var stdout, stderr strings.Builder
	require.NoError(t, h.CopyOutput(t.Context(), &stdout, &stderr))
	assert.Equal(t, minuteLines(20), stdout.String())
	assert.Equal(t, 5, strings.Count(stderr.String(), "progress"))
	for _, r := range requests(le.srv, "GET", "/cmd/"+h.ID()) {
		assert.Equal(t, "true", r.Query.Get("wait"), "the wait proved the end: no extra GET after the logs")
	}
	assert.Equal(t, 1, le.srv.CommandCount())
}

// A session that ends under a command is the session's end, not a cut:
// ErrGone, never ErrStreamEnded, and never a re-attachment.
func TestSessionExpiryDuringCommandIsGone(t *testing.T) {
	t.Parallel()
	for _, detached := range []bool{false, true} {
		t.Run(fmt.Sprintf("detached=%v", detached), func(t *testing.T) {
			t.Parallel()
			le := newLongEnv(t)
			out := newAckWriter()
			le.handle("agent", sandboxtest.Steps{}.Stdout("started\n").Block())
			sb, err := le.c.Create(t.Context(), sandbox.CreateParams{Timeout: 2 * time.Minute})
			require.NoError(t, err)

			done := make(chan error, 1)
			if detached {
				cmd := sb.Command("agent")
				cmd.CaptureLimit = -1 // Wait only waits
				h, err := cmd.Start(t.Context())
				require.NoError(t, err)
				require.Eventually(t, func() bool { return le.waitsSeen(h.ID()) }, 10*time.Second, time.Millisecond)
				go func() { _, err := h.Wait(t.Context()); done <- err }()
				require.Eventually(t, func() bool { return le.waits.Load() > 0 }, 10*time.Second, time.Millisecond)
			} else {
				cmd := sb.Command("agent")
				cmd.Stdout = out
				go func() { _, err := cmd.Run(t.Context()); done <- err }()
				<-out.seen
			}
			le.clock.Advance(3 * time.Minute)
			le.srv.Sessions() // the fake observes its clock and ends the session
			err = <-done
			assert.ErrorIs(t, err, sandbox.ErrGone)
			assert.NotErrorIs(t, err, sandbox.ErrStreamEnded)
			assert.Empty(t, le.reattachments())
			assert.Equal(t, 1, le.srv.CommandCount())
		})
	}
}

// waitsSeen reports whether the command's output has begun.
func (le *longEnv) waitsSeen(id string) bool {
	out, _, _ := le.srv.Output(id)
	return out != ""
}
