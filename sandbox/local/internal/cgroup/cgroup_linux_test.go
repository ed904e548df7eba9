package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

// catGroupsIn runs cat /proc/self/cgroup through g.StartIn and returns
// whether it was born in g and what it read.
func catGroupsIn(t *testing.T, g *Cgroup) (bool, string) {
	t.Helper()
	var out strings.Builder
	c := exec.Command("cat", "/proc/self/cgroup")
	c.Stdout = &out
	born, err := g.StartIn(func(into func(*syscall.SysProcAttr)) error {
		c.SysProcAttr = &syscall.SysProcAttr{}
		into(c.SysProcAttr)
		return c.Start()
	})
	require.NoError(t, err)
	require.NoError(t, c.Wait())
	return born, out.String()
}

func TestStartInIsBornInTheGroup(t *testing.T) {
	g := newTestCgroup(t)
	born, groups := catGroupsIn(t, g)
	require.True(t, born)
	// cat's first instruction already ran in the group: it read its own
	// groups before it could have been moved.
	for i, dir := range g.dirs {
		rel := strings.TrimPrefix(dir, g.owner.mounts[g.ctrls[i]])
		assert.Contains(t, groups, ":"+rel+"\n", "born in the %s group", g.ctrls[i])
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

func TestStartInClonesIntoAV2Group(t *testing.T) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	mp := mountPoint(mounts, "cgroup2", "")
	self, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	var rel string
	for line := range strings.Lines(string(self)) {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			rel = r
		}
	}
	dir := filepath.Join(mp, rel, "sandbox-v2test-"+strconv.Itoa(os.Getpid()))
	if mp == "" || os.Mkdir(dir, 0o755) != nil {
		t.Skip("SKIPPED: no writable cgroup v2 directory")
	}
	g := &Cgroup{dirs: []string{dir}, v2: true, owner: &Cgroups{v2: filepath.Dir(dir)}}
	t.Cleanup(g.Remove)
	born, groups := catGroupsIn(t, g)
	assert.True(t, born)
	assert.Contains(t, groups, "0::"+strings.TrimPrefix(dir, mp)+"\n", "cloned into the group")
}

func TestFindWhileCommandsStart(t *testing.T) {
	g := newTestCgroup(t)
	if g.v2 {
		t.Skip("SKIPPED: on cgroup v2 no thread joins a group")
	}
	// Threads of this process join sandbox groups for a moment; the
	// process's own groups are still where Find makes its groups.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = catGroupsIn(t, g)
			}
		})
	}
	for range 300 {
		cgs, err := Find()
		require.NoError(t, err)
		for _, dir := range []string{cgs.memory, cgs.pids} {
			assert.NotContains(t, dir, "sandbox-", "Find chose a sandbox's group")
		}
	}
	close(stop)
	wg.Wait()
}

// TestStartInStrandedEndsWithItsGoroutine: where the thread that started a
// command in its group cannot go back to this process's groups (here their
// tasks files belong to groups removed since), StartIn fails with
// ErrStranded, the thread stays with the calling goroutine and ends with
// it, and the command it started dies with the thread (Pdeathsig); no
// other goroutine ever runs in the sandbox's group.
func TestStartInStrandedEndsWithItsGoroutine(t *testing.T) {
	g := newTestCgroup(t)
	if g.v2 {
		t.Skip("SKIPPED: on cgroup v2 no thread joins a group")
	}
	cgs := g.owner
	home := map[string]*os.File{}
	for i, ctrl := range g.ctrls {
		dir := filepath.Join(filepath.Dir(g.dirs[i]), "sandbox-stranded-"+strconv.Itoa(os.Getpid()))
		require.NoError(t, os.Mkdir(dir, 0o755))
		f, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		require.NoError(t, os.Remove(dir))
		home[ctrl] = f
	}
	cgs.mu.Lock()
	cgs.homeFile = home
	realHome := cgs.home
	cgs.home = map[string]string{}
	for ctrl, f := range home {
		cgs.home[ctrl] = filepath.Dir(f.Name()) // removed too
	}
	cgs.mu.Unlock()
	t.Cleanup(func() {
		cgs.mu.Lock()
		cgs.home = realHome
		cgs.mu.Unlock()
	})

	c := exec.Command("sleep", "60")
	type result struct {
		tid int
		err error
	}
	done := make(chan result)
	go func() {
		var tid int
		_, err := g.StartIn(func(into func(*syscall.SysProcAttr)) error {
			tid = syscall.Gettid()
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			into(c.SysProcAttr)
			return c.Start()
		})
		if err == nil {
			assert.Equal(t, tid, syscall.Gettid(), "the goroutine stays on its thread")
		}
		done <- result{tid, err}
	}()
	r := <-done
	require.ErrorIs(t, r.err, ErrStranded)
	require.NotNil(t, c.Process, "the command started before the thread could not go back")
	require.NotEqual(t, os.Getpid(), r.tid, "never the main thread, which the runtime does not end")
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	select {
	case err := <-waited:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "killed when its thread ended")
	case <-time.After(10 * time.Second):
		_ = c.Process.Kill()
		t.Fatal("the command outlived the stranded thread")
	}
	assert.Eventually(t, g.empty, 5*time.Second, 10*time.Millisecond, "the stranded thread ended: nothing of this process is left in the group")
}

// TestKillAllSeesWhatStartedSinceTheLastRead: a group found empty, then
// given a command, is emptied by KillAll at once. On cgroup v1 a
// cgroup.procs file kept open answers the list it read first for a second
// after each read, so a KillAll through one saw the group still empty and
// left the command running.
func TestKillAllSeesWhatStartedSinceTheLastRead(t *testing.T) {
	g := newTestCgroup(t)
	for range 5 {
		require.True(t, g.empty())
		c := exec.Command("sleep", "60")
		_, err := g.StartIn(func(into func(*syscall.SysProcAttr)) error {
			c.SysProcAttr = &syscall.SysProcAttr{}
			into(c.SysProcAttr)
			return c.Start()
		})
		require.NoError(t, err)
		if g.pidsNow != nil {
			assert.False(t, g.countsNone(), "the pids controller counts the command at once")
		}
		g.KillAll()
		waited := make(chan error, 1)
		go func() { waited <- c.Wait() }()
		select {
		case err := <-waited:
			require.Error(t, err, "killed")
		case <-time.After(2 * time.Second):
			_ = c.Process.Kill()
			<-waited
			t.Fatal("KillAll returned with the command still running")
		}
		assert.Eventually(t, g.countsNone, 2*time.Second, time.Millisecond, "the count is zero once it is reaped")
	}
}
