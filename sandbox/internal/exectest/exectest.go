// Package exectest drives a local.Executor in tests: it starts a command,
// records its output chunk by chunk and collects its exit.
package exectest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

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
