//go:build linux

package hostexec_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
)

// The host executor isolates nothing, but three promises hold whatever a
// command does: no inherited descriptor, no controlling terminal, and no
// process left once the command has ended.

func TestHostileDaemonDoesNotSurvive(t *testing.T) {
	// Two daemons leave the command's session; each writes its pid before
	// it sleeps, and the command prints both once both are there.
	const script = `setsid sh -c 'echo $$ > d1; exec sleep 600' &
(setsid sh -c 'echo $$ > d2; exec sleep 600' &)
while [ ! -s d1 ] || [ ! -s d2 ]; do sleep 0.01; done
cat d1 d2`
	for _, how := range []string{"exit", "session end"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := localCmd(t, "sh", "-c", script)
			if how == "session end" {
				c.Args[1] += "; sleep 600"
			}
			_, out, _, res := exectest.Start(t, ctx, hostexec.New(), c)
			var pids []int
			require.Eventually(t, func() bool {
				pids = localPIDs(t, out.String())
				return len(pids) == 2
			}, 30*time.Second, 10*time.Millisecond)
			if how == "session end" {
				cancel()
			}
			select {
			case <-res:
			case <-time.After(30 * time.Second):
				t.Fatal("Wait did not return")
			}
			for _, pid := range pids {
				assert.Eventually(t, func() bool { return localGone(pid) }, 10*time.Second, 20*time.Millisecond,
					"daemon %d does not outlive the command", pid)
			}
		})
	}
}

func TestHostileDaemonWithoutEnvironment(t *testing.T) {
	if cg, err := cgroup.Find(); err != nil || !cg.Pids() {
		t.Skipf("SKIPPED: without a writable control group, a daemon that clears its environment escapes: %v", err)
	}
	// It leaves the session and drops the environment that marks the
	// command's processes: only the command's control group still holds it.
	const script = `setsid env -i sh -c 'echo $$ > d; exec sleep 600' &
while [ ! -s d ]; do sleep 0.01; done
cat d`
	out, stderr, _ := exectest.Run(t, hostexec.New(), localCmd(t, "sh", "-c", script))
	pids := localPIDs(t, out)
	require.Len(t, pids, 1, stderr)
	assert.Eventually(t, func() bool { return localGone(pids[0]) }, 10*time.Second, 20*time.Millisecond,
		"daemon %d does not outlive the command", pids[0])
}

func TestHostileInheritedDescriptor(t *testing.T) {
	log := filepath.Join(t.TempDir(), "supervisor.log")
	fd, err := syscall.Open(log, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	_, stderr, _ := exectest.Run(t, hostexec.New(), localCmd(t, "sh", "-c", fmt.Sprintf("echo hostile >&%d", fd)))
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Empty(t, data, "nothing reached the host file: %s", stderr)
}

func TestHostileControllingTerminal(t *testing.T) {
	_, stderr, code := exectest.Run(t, hostexec.New(), localCmd(t, "sh", "-c", "echo hostile > /dev/tty"))
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "/dev/tty", "the command has no controlling terminal")
}

// TestGroupOnlyLeavesDaemons: with GroupOnly the command's process group
// alone is ended, so a daemon that left its session is still there once
// Wait has returned.
func TestGroupOnlyLeavesDaemons(t *testing.T) {
	const script = `setsid sh -c 'echo $$ > d1; exec sleep 600' &
while [ ! -s d1 ]; do sleep 0.01; done
cat d1`
	_, out, _, res := exectest.Start(t, t.Context(), hostexec.New(hostexec.GroupOnly()), localCmd(t, "sh", "-c", script))
	select {
	case <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return")
	}
	pids := localPIDs(t, out.String())
	require.Len(t, pids, 1, "output %q", out.String())
	t.Cleanup(func() { _ = syscall.Kill(pids[0], syscall.SIGKILL) })
	assert.False(t, localGone(pids[0]), "the daemon %d ended with the command", pids[0])
}
