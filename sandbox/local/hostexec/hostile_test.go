//go:build linux

package hostexec_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// The host executor isolates nothing, but three promises hold whatever a
// command does: no inherited descriptor, no controlling terminal, and no
// process left once the command has ended.

// processesWith lists the host pids whose command line contains s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(data), s) {
			found = append(found, e.Name())
		}
	}
	return found
}

func TestHostileDaemonDoesNotSurvive(t *testing.T) {
	for _, how := range []string{"exit", "session end"} {
		t.Run(how, func(t *testing.T) {
			marker := map[string]string{"exit": "5151.31", "session end": "5151.32"}[how]
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			script := fmt.Sprintf("setsid sleep %[1]s & (setsid sh -c 'sleep %[1]s' &) & echo ready", marker)
			if how == "session end" {
				script += "; sleep " + marker
			}
			c := localCmd(t, "sh", "-c", script)
			_, out, _, res := exectest.Start(t, ctx, hostexec.New(), c)
			<-out.First()
			require.Eventually(t, func() bool { return len(processesWith(t, marker)) >= 2 }, 10*time.Second, 10*time.Millisecond)
			if how == "session end" {
				cancel()
			}
			select {
			case <-res:
			case <-time.After(30 * time.Second):
				t.Fatal("Wait did not return")
			}
			assert.Eventually(t, func() bool { return len(processesWith(t, marker)) == 0 }, 10*time.Second, 20*time.Millisecond,
				"no process started by the command outlives it, daemons included")
		})
	}
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
