// Package exectest drives a local.Executor in tests: it starts a command,
// records its output chunk by chunk and collects its exit.
package exectest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// Writer records the chunks written to it and announces the first one.
type Writer struct {
	mu     sync.Mutex
	chunks []string
	first  chan struct{}
	once   sync.Once
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{first: make(chan struct{})} }

// Write records p as one chunk.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.chunks = append(w.chunks, string(p))
	w.mu.Unlock()
	w.once.Do(func() { close(w.first) })
	return len(p), nil
}

// First is closed once the first chunk was written.
func (w *Writer) First() <-chan struct{} { return w.first }

// String returns everything written so far.
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b bytes.Buffer
	for _, c := range w.chunks {
		b.WriteString(c)
	}
	return b.String()
}

// Chunks returns the chunks written so far, one per Write.
func (w *Writer) Chunks() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.chunks...)
}

// Result is what Wait returned.
type Result struct {
	Code int
	Err  error
}

// Start starts cmd with e, its output going to two new Writers, and waits
// for it in the background.
func Start(t testing.TB, ctx context.Context, e local.Executor, cmd *local.Cmd) (local.Process, *Writer, *Writer, <-chan Result) {
	t.Helper()
	stdout, stderr := NewWriter(), NewWriter()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	p, err := e.Start(ctx, cmd)
	require.NoError(t, err)
	res := make(chan Result, 1)
	go func() {
		code, err := p.Wait()
		res <- Result{code, err}
	}()
	return p, stdout, stderr, res
}

// Run runs cmd to completion and returns its output and exit code.
func Run(t testing.TB, e local.Executor, cmd *local.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	_, out, errw, res := Start(t, context.Background(), e, cmd)
	r := <-res
	require.NoError(t, r.Err)
	return out.String(), errw.String(), r.Code
}

// HostProcesses lists the host pids whose command line contains s, so
// that a test can check that no process of a command is left.
func HostProcesses(t testing.TB, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(data, []byte(s)) {
			found = append(found, e.Name())
		}
	}
	return found
}

// signalWait bounds how long the signal tests wait for their commands
// to end: the commands sleep far longer, so one still running then never
// got its signal.
const signalWait = 20 * time.Second

// SignalAtOnce starts sh -c "sleep 30" with e n times, in a sandbox
// backed by dir, and sends each SIGTERM as soon as its Start returns:
// every one must end of it, with exit code 143. A signal sent while the
// executor still sets the command up must not be lost.
func SignalAtOnce(t *testing.T, e local.Executor, dir string, n int) {
	t.Helper()
	procs := make([]local.Process, n)
	codes := make([]chan Result, n)
	for i := range n {
		p, err := e.Start(t.Context(), &local.Cmd{
			SandboxName: "signals", Name: "sh", Args: []string{"-c", "sleep 30"},
			Cwd: "/vercel/sandbox", Dir: dir, HostCwd: dir, Stdout: io.Discard, Stderr: io.Discard,
		})
		require.NoError(t, err)
		require.NoError(t, p.Signal(int(syscall.SIGTERM)))
		procs[i], codes[i] = p, make(chan Result, 1)
		go func() {
			code, err := p.Wait()
			codes[i] <- Result{code, err}
		}()
	}
	deadline := time.After(signalWait)
	lost := 0
	for i, p := range procs {
		var r Result
		select {
		case r = <-codes[i]:
		case <-deadline:
			require.NoError(t, p.Signal(int(syscall.SIGKILL)))
			r = <-codes[i]
		}
		require.NoError(t, r.Err)
		if r.Code != 128+int(syscall.SIGTERM) {
			lost++
		}
	}
	assert.Zero(t, lost, "SIGTERM sent at once was lost %d times in %d", lost, n)
}

// SignalAtOnceThroughAPI does what SignalAtOnce does through sb, with the
// public client: sb.Command(...).Start, then at once Handle.Signal.
func SignalAtOnceThroughAPI(t *testing.T, sb *sandbox.Sandbox, n int) {
	t.Helper()
	handles := make([]*command.Handle, n)
	for i := range n {
		h, err := sb.Command("sh", "-c", "sleep 30").Start(t.Context())
		require.NoError(t, err)
		require.NoError(t, h.Signal(t.Context(), command.SIGTERM))
		handles[i] = h
	}
	ctx, cancel := context.WithTimeout(t.Context(), signalWait)
	defer cancel()
	lost := 0
	for _, h := range handles {
		res, err := h.Wait(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			require.NoError(t, h.Kill(t.Context()))
		}
		var ee *command.ExitError
		if !errors.As(err, &ee) || res.ExitCode() != 128+int(syscall.SIGTERM) {
			lost++
		}
	}
	assert.Zero(t, lost, "SIGTERM sent at once was lost %d times in %d", lost, n)
}
