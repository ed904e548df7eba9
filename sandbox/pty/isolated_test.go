//go:build linux

package pty_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

var _ local.TTYExecutor = (*isolated.Executor)(nil)

// newIsolatedSandbox starts a local server whose commands run each in a
// bubblewrap sandbox, on real terminals, and creates a sandbox on it. It
// skips the test where this system cannot isolate commands.
func newIsolatedSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	iso, err := isolated.New()
	if errors.Is(err, isolated.ErrUnavailable) {
		t.Skipf("SKIPPED: terminals on the isolated executor need bubblewrap and user namespaces: %v", err)
	}
	require.NoError(t, err)
	_, sb := newSandboxOn(t, []local.Option{local.WithExecutor(iso)})
	return sb
}

func TestIsolatedShellTypeResizeExit(t *testing.T) {
	t.Parallel()
	typeResizeExit(t, newIsolatedSandbox(t))
}

func TestIsolatedCommandNotFound(t *testing.T) {
	t.Parallel()
	notFound(t, newIsolatedSandbox(t))
}

// A command on a terminal is isolated as any other: its own namespaces,
// no descriptor of the server, its limits and seccomp filter; its
// terminal, /dev/tty included, is the session's and nothing else.
func TestIsolatedTerminalIsTheSession(t *testing.T) {
	t.Parallel()
	sb := newIsolatedSandbox(t)
	// A descriptor the server inherited from its parent: no close-on-exec.
	fd, err := syscall.Open(filepath.Join(t.TempDir(), "supervisor.log"), syscall.O_WRONLY|syscall.O_CREAT, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	hostPidNS, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)

	out := newScreen()
	code, err := pty.Run(t.Context(), sb, &pty.Cmd{
		Name: "sh",
		Args: []string{"-c", fmt.Sprintf(`tty && test -t 0 && test -t 1 && test -t 2 && echo "on the terminal"
echo "fd0 $(readlink /proc/self/fd/0)"
echo "through /dev/tty" >/dev/tty
echo "size $(stty size </dev/tty)"
test -e /proc/$$/fd/%d || echo "no fd %d"
echo "fds $(ls /proc/self/fd | tr '\n' ' ')"
echo "pidns $(readlink /proc/self/ns/pid) procs $(ls -d /proc/[0-9]* | wc -l)"
echo "uid $(id -u) core $(ulimit -c) nproc $(awk "/Max processes/{print \$3}" /proc/self/limits)"
grep Seccomp: /proc/self/status
exit 4`, fd, fd)},
		Rows:   33,
		Cols:   77,
		Stdout: out,
	})
	require.NoError(t, err)
	screen := out.String()
	assert.Equal(t, 4, code, screen)

	tty := regexp.MustCompile(`(?m)^(/dev/\S+)\r$`).FindStringSubmatch(screen)
	require.NotNil(t, tty, "tty names a device; screen:\n%s", screen)
	assert.Contains(t, screen, "on the terminal\r\n", "standard input, output and error are the terminal")
	assert.Regexp(t, `fd0 /dev/pts/\d+\r\n`, screen, "a pseudo-terminal")
	assert.Contains(t, screen, "through /dev/tty\r\n", "/dev/tty is the session's terminal")
	assert.Contains(t, screen, "size 33 77\r\n", "with the session's size")

	assert.Contains(t, screen, fmt.Sprintf("no fd %d\r\n", fd), "no descriptor of the server")
	fds := regexp.MustCompile(`fds ([0-9 ]*)\r\n`).FindStringSubmatch(screen)
	require.NotNil(t, fds, screen)
	for _, f := range strings.Fields(fds[1]) {
		n, _ := strconv.Atoi(f)
		assert.LessOrEqual(t, n, 3, "only 0-2 (and ls's own directory) are open")
	}
	assert.Contains(t, screen, "pidns pid:[", screen)
	assert.NotContains(t, screen, hostPidNS, "a PID namespace of its own")
	procs := regexp.MustCompile(`procs (\d+)\r\n`).FindStringSubmatch(screen)
	require.NotNil(t, procs, screen)
	n, _ := strconv.Atoi(procs[1])
	assert.LessOrEqual(t, n, 6, "only the sandbox's few processes are visible")
	assert.Contains(t, screen, fmt.Sprintf("uid 1000 core 0 nproc %d\r\n", isolated.DefaultProcs), "the sandbox's user and limits")
	assert.Regexp(t, `Seccomp:\s+2\r\n`, screen, "the seccomp filter")
}

// What a command on a terminal starts ends with it, or with the session.
func TestIsolatedNoSurvivor(t *testing.T) {
	t.Parallel()
	sb := newIsolatedSandbox(t)
	// Three sleeps, each running before the script goes on: one in a
	// session of its own, one immune to hangups, one background job.
	survivors := func(marker string) string {
		return `run() { "$@" & while [ "$(cat /proc/$!/comm 2>/dev/null)" != sleep ]; do sleep 0.01; done; }
run setsid sleep ` + marker + `; run nohup sleep ` + marker + `; run sleep ` + marker + `
`
	}
	gone := func(t *testing.T, marker, msg string) {
		t.Helper()
		// The kernel ends the PID namespace as the command's end is
		// reported, as for any isolated command.
		assert.Eventually(t, func() bool { return len(hostSleeps(t, marker)) == 0 }, 5*time.Second, 10*time.Millisecond, msg)
	}
	t.Run("exit", func(t *testing.T) {
		marker := strconv.Itoa(100000 + rand.IntN(900000))
		out := newScreen()
		code, err := pty.Run(t.Context(), sb, &pty.Cmd{
			Name:   "sh",
			Args:   []string{"-c", survivors(marker) + "exit 5"},
			Stdout: out,
		})
		require.NoError(t, err)
		assert.Equal(t, 5, code, out.String())
		gone(t, marker, "no process left once the command has ended")
	})
	t.Run("cancel", func(t *testing.T) {
		marker := strconv.Itoa(100000 + rand.IntN(900000))
		cancelMidSession(t, sb, survivors(marker))
		gone(t, marker, "no process left once the session was cancelled")
	})
}

// Job control works: ^C interrupts the foreground job, not the shell, and
// the shell ends with its own exit code.
func TestIsolatedInterruptForegroundJob(t *testing.T) {
	t.Parallel()
	sb := newIsolatedSandbox(t)
	marker := strconv.Itoa(100000 + rand.IntN(900000))
	tm := start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-i"}})
	tm.waitFor("$ ", 1)
	tm.typeIn("sleep " + marker + "\n")
	require.Eventually(t, func() bool { return len(hostSleeps(t, marker)) == 1 }, 10*time.Second, 10*time.Millisecond)
	tm.typeIn("\x03")
	tm.waitFor("$ ", 2)
	tm.typeIn("echo status $?; exit 6\n")
	code, err := tm.wait()
	require.NoError(t, err)
	assert.Equal(t, 6, code, tm.screen.String())
	assert.Contains(t, tm.screen.String(), "status 130\r\n", "the job died of SIGINT")
}

// hostSleeps returns the pids of the host's processes running sleep with
// argument marker.
func hostSleeps(t *testing.T, marker string) []int {
	t.Helper()
	want := []byte("sleep\x00" + marker + "\x00")
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.HasSuffix(cmdline, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A terminal is a command of its sandbox: it sees the sandbox's own
// users (alice, made with the client; sudo -u alice), environment,
// directory and limits, as any other command does.
func TestIsolatedTerminalIsACommand(t *testing.T) {
	t.Parallel()
	iso, err := isolated.New()
	if errors.Is(err, isolated.ErrUnavailable) {
		t.Skipf("SKIPPED: terminals on the isolated executor need bubblewrap and user namespaces: %v", err)
	}
	require.NoError(t, err)
	if ok, why := iso.Users(); !ok {
		t.Skipf("SKIPPED: no users in sandboxes here: %s", why)
	}
	_, sb := newSandboxOn(t, []local.Option{local.WithExecutor(iso)})
	_, err = sb.CreateUser(t.Context(), "alice")
	require.NoError(t, err)
	assertTerminalIsACommand(t, sb)

	out := newScreen()
	code, err := pty.Run(t.Context(), sb, &pty.Cmd{Name: "id", Args: []string{"-un"}, Sudo: true, Stdout: out})
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	assert.Equal(t, "root\r\n", out.String())
	out = newScreen()
	code, err = pty.Run(t.Context(), sb, &pty.Cmd{Name: "sudo", Args: []string{"-u", "alice", "--", "sh", "-c", "echo $(id -un) $HOME"}, Stdout: out})
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	assert.Equal(t, "alice /home/alice\r\n", out.String())
}
