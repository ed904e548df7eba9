//go:build unix

package hostexec_test

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// localCmd is a command whose sandbox lives in a fresh temporary directory.
func localCmd(t *testing.T, name string, args ...string) *local.Cmd {
	t.Helper()
	dir := t.TempDir()
	return &local.Cmd{
		Name:    name,
		Args:    args,
		Cwd:     "/vercel/sandbox",
		Dir:     dir,
		HostCwd: filepath.Join(dir, "vercel", "sandbox"),
		Env:     map[string]string{},
	}
}

// localGone reports whether pid no longer runs: it does not exist or is a
// zombie waiting to be reaped.
func localGone(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] == 'Z' || s[i+2] == 'X'
		}
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// localExecd reports whether pid runs the program name. Without /proc it
// waits a little and reports true.
func localExecd(pid int, name string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat("/proc/self"); err != nil {
			time.Sleep(100 * time.Millisecond)
			return true
		}
	}
	return err == nil && strings.TrimSpace(string(b)) == name
}

// localPIDs parses one pid per line.
func localPIDs(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		require.NoError(t, err, "line %q", sc.Text())
		pids = append(pids, pid)
	}
	return pids
}

// lineWriter announces each complete line written to it.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		s := w.buf.String()
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		w.lines <- s[:i]
		w.buf.Reset()
		w.buf.WriteString(s[i+1:])
	}
	return len(p), nil
}

// countWriter counts bytes and writes.
type countWriter struct {
	bytes, writes, other atomic.Int64
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	w.bytes.Add(int64(len(p)))
	for _, b := range p {
		if b != 'a' {
			w.other.Add(1)
		}
	}
	return len(p), nil
}

func TestExecutor(t *testing.T) {
	verifyNoLeaks(t)
	e := hostexec.New()

	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := exectest.Run(t, e, localCmd(t, "echo", "hello", "world"))
		assert.Equal(t, "hello world\n", out)
		assert.Empty(t, errOut)
		assert.Equal(t, 0, code)
	})

	t.Run("stdout, stderr and exit code", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := exectest.Run(t, e, localCmd(t, "sh", "-c", "echo out; echo err >&2; exit 3"))
		assert.Equal(t, "out\n", out)
		assert.Equal(t, "err\n", errOut)
		assert.Equal(t, 3, code)
	})

	t.Run("working directory is created and used, HOME is the sandbox", func(t *testing.T) {
		t.Parallel()
		c := localCmd(t, "sh", "-c", `pwd; echo "$HOME"; echo "$LANG"; echo x > made.txt`)
		out, _, code := exectest.Run(t, e, c)
		require.Equal(t, 0, code)
		wd, err := filepath.EvalSymlinks(c.HostCwd)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 3)
		gotWD, err := filepath.EvalSymlinks(lines[0])
		require.NoError(t, err)
		assert.Equal(t, wd, gotWD)
		assert.Equal(t, c.Dir, lines[1])
		assert.Equal(t, "C.UTF-8", lines[2])
		assert.FileExists(t, filepath.Join(c.HostCwd, "made.txt"))
	})

	t.Run("output streams while the process runs", func(t *testing.T) {
		t.Parallel()
		p, out, _, res := exectest.Start(t, context.Background(), e, localCmd(t, "sh", "-c", "echo first; sleep 5; echo second"))
		<-out.First()
		assert.Equal(t, "first\n", out.String())
		// Had the process ended, it would have printed "second" and exited 0.
		require.NoError(t, p.Signal(int(syscall.SIGTERM)))
		r := <-res
		require.NoError(t, r.Err)
		assert.Equal(t, 128+int(syscall.SIGTERM), r.Code)
		assert.Equal(t, "first\n", out.String())
	})

	t.Run("a signal reaches the whole process group", func(t *testing.T) {
		t.Parallel()
		// The shell traps SIGTERM and lives on; its child does not.
		lines := make(chan string, 8)
		c := localCmd(t, "sh", "-c", `trap "echo trapped" TERM; echo $$; sleep 100 & echo $!; while :; do sleep 1; done`)
		c.Stdout = &lineWriter{lines: lines}
		p, err := e.Start(context.Background(), c)
		require.NoError(t, err)
		shell, err := strconv.Atoi(<-lines)
		require.NoError(t, err)
		child, err := strconv.Atoi(<-lines)
		require.NoError(t, err)
		// Until it runs sleep, the child is a copy of the shell, trap included.
		require.Eventually(t, func() bool { return localExecd(child, "sleep") }, 5*time.Second, 5*time.Millisecond)

		require.NoError(t, p.Signal(int(syscall.SIGTERM)))
		assert.Equal(t, "trapped", <-lines)
		assert.Eventually(t, func() bool { return localGone(child) }, 5*time.Second, 5*time.Millisecond,
			"the child died of the group signal while the shell still ran")
		assert.False(t, localGone(shell))

		require.NoError(t, p.Signal(int(syscall.SIGKILL)))
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 137, code)
		assert.Eventually(t, func() bool { return localGone(shell) }, 5*time.Second, 5*time.Millisecond)
	})

	t.Run("kill of the group: sh -c 'sleep 100 & sleep 100'", func(t *testing.T) {
		t.Parallel()
		c := localCmd(t, "sh", "-c", "sleep 100 & sleep 100")
		p, err := e.Start(context.Background(), c)
		require.NoError(t, err)
		// Find the group's members: the shell and its two sleeps.
		var members []int
		require.Eventually(t, func() bool {
			members = localGroupMembers(t, c.HostCwd)
			return len(members) >= 3
		}, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, p.Signal(int(syscall.SIGKILL)))
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 137, code)
		for _, pid := range members {
			assert.Eventually(t, func() bool { return localGone(pid) }, 5*time.Second, 5*time.Millisecond, "member %d", pid)
		}
	})

	t.Run("background jobs do not outlive the command", func(t *testing.T) {
		t.Parallel()
		out, _, code := exectest.Run(t, e, localCmd(t, "sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!"))
		require.Equal(t, 0, code)
		pids := localPIDs(t, out)
		require.Len(t, pids, 1)
		assert.Eventually(t, func() bool { return localGone(pids[0]) }, 5*time.Second, 5*time.Millisecond)
	})

	t.Run("a process that leaves the group cannot hold Wait", func(t *testing.T) {
		t.Parallel()
		if _, err := os.Stat("/usr/bin/setsid"); err != nil {
			t.Skip("no setsid(1)")
		}
		e := hostexec.New(hostexec.WaitDelay(50 * time.Millisecond))
		// setsid moves the sleep to a new session; it keeps stdout open.
		lines := make(chan string, 2)
		if _, err := os.Stat("/proc/self/comm"); err != nil {
			t.Skip("no /proc")
		}
		// The shell exits only once the sleep has left its group.
		c := localCmd(t, "sh", "-c", `setsid sleep 100 & pid=$!; while [ "$(cat /proc/$pid/comm)" != sleep ]; do sleep 0.01; done; echo $pid`)
		c.Stdout = &lineWriter{lines: lines}
		p, err := e.Start(context.Background(), c)
		require.NoError(t, err)
		pid, err := strconv.Atoi(<-lines)
		require.NoError(t, err)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 0, code)
	})

	t.Run("the end of the session kills the group", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		lines := make(chan string, 4)
		c := localCmd(t, "sh", "-c", "sleep 100 & echo $!; wait")
		c.Stdout = &lineWriter{lines: lines}
		p, err := e.Start(ctx, c)
		require.NoError(t, err)
		child, err := strconv.Atoi(<-lines)
		require.NoError(t, err)
		cancel()
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 137, code)
		assert.Eventually(t, func() bool { return localGone(child) }, 5*time.Second, 5*time.Millisecond)

		_, err = e.Start(ctx, localCmd(t, "true"))
		assert.ErrorIs(t, err, context.Canceled)
	})

	t.Run("a 10 MiB line arrives whole and in chunks", func(t *testing.T) {
		t.Parallel()
		const size = 10 << 20
		var w countWriter
		c := localCmd(t, "sh", "-c", "head -c "+strconv.Itoa(size)+" /dev/zero | tr '\\0' a")
		c.Stdout = &w
		c.Stderr = &w
		p, err := e.Start(context.Background(), c)
		require.NoError(t, err)
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.Equal(t, int64(size), w.bytes.Load())
		assert.Zero(t, w.other.Load())
		assert.Greater(t, w.writes.Load(), int64(1), "written as it was read, not at the end")
	})

	t.Run("missing and unexecutable commands", func(t *testing.T) {
		t.Parallel()
		// A missing executable does not start: the server answers
		// executable_not_found, or (friendly) exit code 127 with Msg.
		_, err := e.Start(context.Background(), localCmd(t, "no-such-command-sbx"))
		var nf *local.NotFoundError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, "no-such-command-sbx: command not found\n", nf.Msg)

		_, err = e.Start(context.Background(), localCmd(t, "./missing.sh"))
		require.ErrorAs(t, err, &nf)
		assert.Contains(t, nf.Msg, "./missing.sh: No such file or directory")

		c := localCmd(t, "./data.txt")
		require.NoError(t, os.MkdirAll(c.HostCwd, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(c.HostCwd, "data.txt"), []byte("x"), 0o644))
		_, errOut, code := exectest.Run(t, e, c)
		assert.Equal(t, 126, code)
		assert.Contains(t, errOut, "Permission denied")
	})

	t.Run("relative names and PATH entries resolve in the working directory", func(t *testing.T) {
		t.Parallel()
		c := localCmd(t, "./run.sh", "arg")
		require.NoError(t, os.MkdirAll(filepath.Join(c.HostCwd, "bin"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(c.HostCwd, "run.sh"), []byte("#!/bin/sh\necho \"run $1\"\n"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(c.HostCwd, "bin", "tool"), []byte("#!/bin/sh\necho tool\n"), 0o755))
		out, _, code := exectest.Run(t, e, c)
		assert.Equal(t, 0, code)
		assert.Equal(t, "run arg\n", out)

		c2 := *c
		c2.Name, c2.Args = "tool", nil
		c2.Env = map[string]string{"PATH": "bin:/usr/bin:/bin"}
		out, _, code = exectest.Run(t, e, &c2)
		assert.Equal(t, 0, code)
		assert.Equal(t, "tool\n", out)
	})

	t.Run("sudo runs as the current user, or is refused", func(t *testing.T) {
		t.Parallel()
		c := localCmd(t, "id", "-u")
		c.Sudo = true
		out, _, code := exectest.Run(t, e, c)
		assert.Equal(t, 0, code)
		assert.Equal(t, strconv.Itoa(os.Getuid())+"\n", out)

		refusing := hostexec.New(hostexec.RefuseSudo())
		c = localCmd(t, "id", "-u")
		c.Sudo = true
		out, errOut, code := exectest.Run(t, refusing, c)
		assert.Equal(t, 1, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "sudo")
	})

	t.Run("Start needs a directory", func(t *testing.T) {
		t.Parallel()
		_, err := e.Start(context.Background(), &local.Cmd{Name: "true"})
		assert.Error(t, err)
	})

	t.Run("signals after Wait are no-ops", func(t *testing.T) {
		t.Parallel()
		p, err := e.Start(context.Background(), localCmd(t, "true"))
		require.NoError(t, err)
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.NoError(t, p.Signal(int(syscall.SIGKILL)))
		assert.Error(t, p.Signal(-1))
	})
}

// localGroupMembers lists the processes whose working directory is dir, which
// in these tests are exactly the command's process group.
func localGroupMembers(t *testing.T, dir string) []int {
	t.Helper()
	want, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + ent.Name() + "/cwd"); err == nil && cwd == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestExecutorEnv is not parallel: it changes the test process's
// environment.
func TestExecutorEnv(t *testing.T) {
	verifyNoLeaks(t)
	t.Setenv("SBX_TEST_HOST_SECRET", "do-not-leak")
	t.Setenv("SBX_TEST_PASSED", "passed")
	e := hostexec.New(hostexec.PassEnv("SBX_TEST_PASSED", "SBX_TEST_UNSET"))

	c := localCmd(t, "env")
	c.Env = map[string]string{"FROM_SANDBOX": "1", "LANG": "en_US.UTF-8"}
	out, _, code := exectest.Run(t, e, c)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "SBX_TEST_HOST_SECRET")
	assert.NotContains(t, out, "do-not-leak")
	assert.NotContains(t, out, "SBX_TEST_UNSET")
	assert.Contains(t, out, "SBX_TEST_PASSED=passed\n")
	assert.Contains(t, out, "FROM_SANDBOX=1\n")
	assert.Contains(t, out, "LANG=en_US.UTF-8\n", "Cmd.Env wins over the base")
	assert.Contains(t, out, "PATH="+os.Getenv("PATH")+"\n")
	assert.Contains(t, out, "HOME="+c.Dir+"\n")

	e = hostexec.New(hostexec.Path("/usr/bin:/bin"))
	out, _, code = exectest.Run(t, e, localCmd(t, "env"))
	require.Equal(t, 0, code)
	assert.Contains(t, out, "PATH=/usr/bin:/bin\n")
}

// verifyNoLeaks checks, once t and all its parallel subtests are done, that
// they left no goroutine behind.
func verifyNoLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func TestAccountToolsAreRefused(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	p, err := hostexec.New().Start(t.Context(), &local.Cmd{Name: "useradd", Args: []string{"-m", "intruder"}, Sudo: true,
		Dir: t.TempDir(), Stdout: new(strings.Builder), Stderr: &stderr})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	require.Equal(t, 1, code, "the host's accounts are never touched")
	require.Contains(t, stderr.String(), "refused")
}
