//go:build unix

package hostexec_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// ttyLine reads the next line the terminal shows.
func ttyLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	return strings.TrimSuffix(<-lines, "\r")
}

func TestStartTTY(t *testing.T) {
	t.Parallel()
	var _ local.TTYExecutor = hostexec.New()

	t.Run("a command on a terminal of its own, resized", func(t *testing.T) {
		t.Parallel()
		lines := make(chan string, 8)
		c := localCmd(t, "sh", "-c", `tty >/dev/null && echo tty; stty size; read line; stty size; echo "got $line"; exit 3`)
		c.Stdout = &lineWriter{lines: lines}
		p, err := hostexec.New().StartTTY(context.Background(), c, 24, 80)
		require.NoError(t, err)
		assert.Equal(t, "tty", ttyLine(t, lines), "standard input is a terminal")
		assert.Equal(t, "24 80", ttyLine(t, lines))
		require.NoError(t, p.Resize(30, 100))
		_, err = p.Write([]byte("hello\n"))
		require.NoError(t, err)
		assert.Equal(t, "hello", ttyLine(t, lines), "the terminal echoes what is typed")
		assert.Equal(t, "30 100", ttyLine(t, lines), "the command sees the new size")
		assert.Equal(t, "got hello", ttyLine(t, lines))
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 3, code)
		_, err = p.Write([]byte("late\n"))
		assert.Error(t, err, "the terminal is gone once Wait returns")
	})

	t.Run("the end of the session kills it", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		lines := make(chan string, 4)
		c := localCmd(t, "sh", "-c", "echo started; exec cat")
		c.Stdout = &lineWriter{lines: lines}
		p, err := hostexec.New().StartTTY(ctx, c, 24, 80)
		require.NoError(t, err)
		assert.Equal(t, "started", ttyLine(t, lines))
		cancel()
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 137, code, "killed by SIGKILL")
	})

	t.Run("a process that keeps the terminal cannot hold Wait", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/usr/bin/setsid"); err != nil {
			t.Skip("no setsid(1)")
		}
		if _, err := os.Stat("/proc/self/comm"); err != nil {
			t.Skip("no /proc")
		}
		lines := make(chan string, 4)
		c := localCmd(t, "sh", "-c", `setsid sleep 100 & pid=$!; while [ "$(cat /proc/$pid/comm)" != sleep ]; do sleep 0.01; done; echo $pid`)
		c.Stdout = &lineWriter{lines: lines}
		p, err := hostexec.New(hostexec.WaitDelay(50*time.Millisecond)).StartTTY(context.Background(), c, 24, 80)
		require.NoError(t, err)
		pid, err := strconv.Atoi(ttyLine(t, lines))
		require.NoError(t, err)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 0, code)
	})

	t.Run("a command that is not found", func(t *testing.T) {
		t.Parallel()
		lines := make(chan string, 4)
		c := localCmd(t, "no-such-command-here")
		c.Stdout = &lineWriter{lines: lines}
		p, err := hostexec.New().StartTTY(context.Background(), c, 24, 80)
		require.NoError(t, err)
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 127, code)
		assert.Contains(t, ttyLine(t, lines), "not found")
		assert.Error(t, p.Resize(10, 10))
	})
}
