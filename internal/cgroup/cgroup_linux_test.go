package cgroup

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestCgroup returns a group limited to 64 MiB and 8 processes, or
// skips where none can be made.
func newTestCgroup(t *testing.T) *Cgroup {
	t.Helper()
	cgs, err := Find()
	if err != nil {
		t.Skipf("SKIPPED: no writable control groups: %v", err)
	}
	t.Cleanup(cgs.Close)
	g, err := cgs.New(64<<20, 8)
	require.NoError(t, err)
	t.Cleanup(g.Remove)
	return g
}

func TestStartInIsBornInTheGroup(t *testing.T) {
	g := newTestCgroup(t)
	var out strings.Builder
	c := exec.Command("cat", "/proc/self/cgroup")
	c.Stdout = &out
	born, err := g.StartIn(c.Start)
	require.NoError(t, err)
	require.NoError(t, c.Wait())
	if g.v2 {
		assert.False(t, born, "cgroup v2: Add moves the process")
		return
	}
	require.True(t, born)
	// cat's first instruction already ran in the group: it read its own
	// groups before it could have been moved.
	for i, dir := range g.dirs {
		rel := strings.TrimPrefix(dir, g.owner.mounts[g.ctrls[i]])
		assert.Contains(t, out.String(), ":"+rel+"\n", "born in the %s group", g.ctrls[i])
	}
	for _, dir := range g.dirs {
		tasks, err := os.ReadFile(dir + "/tasks")
		require.NoError(t, err)
		assert.Empty(t, strings.TrimSpace(string(tasks)), "no thread of the server stays in the sandbox's group")
	}
	self, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/cgroup")
	require.NoError(t, err)
	assert.NotContains(t, string(self), "sandbox-", "the server is in none of the sandboxes' groups")
}

func TestPidsLimitCountsBwrap(t *testing.T) {
	g := newTestCgroup(t)
	if !g.owner.Pids() {
		t.Skip("SKIPPED: no pids controller")
	}
	dir := g.dirs[len(g.dirs)-1]
	if !g.v2 {
		require.Equal(t, "pids", g.ctrls[len(g.ctrls)-1])
	}
	limit, err := os.ReadFile(dir + "/pids.max")
	require.NoError(t, err)
	assert.Equal(t, "9", strings.TrimSpace(string(limit)), "8 processes for the sandbox, and its bwrap process")
}
