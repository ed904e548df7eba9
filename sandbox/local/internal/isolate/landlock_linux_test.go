package isolate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scopedEngine returns an engine whose sandboxes are scoped, or skips.
func scopedEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := NewEngine()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("SKIPPED: %v", err)
	}
	require.NoError(t, err)
	if err := e.SocketScope(); err != nil {
		require.ErrorIs(t, err, ErrNoScope)
		t.Skipf("SKIPPED: %v", err)
	}
	return e
}

// shell starts script with sh in a minimal sandbox of e; out returns
// what it wrote.
func shell(t *testing.T, e *Engine, script string) (p *Process, out func() string) {
	t.Helper()
	name := t.TempDir() + "/out"
	f, err := os.Create(name)
	require.NoError(t, err)
	defer f.Close()
	p, err = e.Start(&Spec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, Cwd: "/"},
		Options{Stdout: f, Stderr: f})
	require.NoError(t, err)
	return p, func() string { data, _ := os.ReadFile(name); return string(data) }
}

// A sandbox dies with the thread that forked bwrap: the launcher outlives
// Close until its sandboxes have ended, and ends then.
func TestLauncherOutlivesClose(t *testing.T) {
	e := scopedEngine(t)
	running, out := shell(t, e, "echo up; sleep 0.3; exit 7")
	// Close removes the stage of /etc, which a sandbox mounts as it starts.
	require.Eventually(t, func() bool { return out() == "up\n" }, 10*time.Second, time.Millisecond)
	e.mu.Lock()
	l := e.launch
	e.mu.Unlock()
	require.NotNil(t, l, "a scoped engine forks through its launcher")

	e.Close()
	select {
	case <-l.quit:
		t.Fatal("the launcher ended while its sandbox ran")
	default:
	}
	code, err := running.Wait()
	require.NoError(t, err)
	assert.Equal(t, 7, code, "the sandbox ran to its end after Close: %s", out())
	select {
	case <-l.quit:
	default:
		t.Fatal("the launcher outlives its last sandbox after Close")
	}

	// A later Start gets a launcher of its own.
	later, _ := shell(t, e, "exit 3")
	code, err = later.Wait()
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	e.mu.Lock()
	assert.NotSame(t, l, e.launch)
	e.mu.Unlock()
	e.Close()
}

// BenchmarkStartIn measures what the launcher adds to a start: the
// hand-off of the fork to its thread and back, here of a fork that does
// nothing, beside the same call on the calling goroutine.
func BenchmarkStartIn(b *testing.B) {
	noop := func(func(*syscall.SysProcAttr)) error { return nil }
	e := &Engine{}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			_, _ = e.startIn(nil, nil, noop)
		}
	})
	b.Run("launcher", func(b *testing.B) {
		l, err := newLauncher()
		if err != nil {
			b.Skipf("SKIPPED: %v", err)
		}
		defer close(l.quit)
		for b.Loop() {
			_, _ = e.startIn(l, nil, noop)
		}
	})
}

// Where Landlock cannot scope sandboxes, they start as they did: from
// the calling goroutine, without a launcher.
func TestUnscopedEngineStartsWithoutLauncher(t *testing.T) {
	e, err := NewEngine()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("SKIPPED: %v", err)
	}
	require.NoError(t, err)
	defer e.Close()
	e.scopeErr = fmt.Errorf("%w: Landlock ABI 5; scoping needs ABI 6, Linux 6.12", ErrNoScope)
	p, out := shell(t, e, "exit 4")
	code, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 4, code, out())
	assert.Nil(t, e.launch)
	assert.ErrorIs(t, e.SocketScope(), ErrNoScope)
}
