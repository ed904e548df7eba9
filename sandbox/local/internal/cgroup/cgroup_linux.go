package cgroup

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/osthread"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
)

// Cgroups is where per-sandbox control groups can be created: a cgroup v2
// directory with the memory and pids controllers delegated, or the
// directories of the cgroup v1 memory and pids hierarchies, whichever is
// writable.
//
// Creating and removing a group costs the kernel about as much as starting
// a sandbox, so groups whose processes have ended are kept for the next
// sandbox (at most maxIdle of them) until Close.
//
// Opening a file of a control group costs more than the rest of what a
// command's group adds to it (tens of microseconds a file, against about
// one for a write to a file already open), so each group keeps the files
// a thread writes to join it open while it exists, and Cgroups keeps
// those of this process's own groups, to which the thread returns. A
// cgroup.procs file is opened for each read: on cgroup v1 an open one
// goes on answering the list of pids it read first for a second after
// each read.
type Cgroups struct {
	v2      string            // cgroup v2 parent directory, or ""
	memory  string            // cgroup v1 memory parent, or ""
	pids    string            // cgroup v1 pids parent, or ""
	mounts  map[string]string // cgroup v1 controller: its hierarchy's mount point
	home    map[string]string // cgroup v1 controller: this process's group in it
	counter atomic.Int64

	mu       sync.Mutex
	idle     []*Cgroup
	closed   bool
	homeFile map[string]*os.File // the tasks file of home[ctrl], once opened
}

// maxIdle bounds the groups kept for reuse: enough for the commands that
// run at once on a busy server, each of which holds a group (and its open
// files) while it runs. An empty group costs the kernel a few KiB.
const maxIdle = 64

// Cgroup is the control group of one sandbox.
type Cgroup struct {
	dirs      []string   // one per controller, for cgroup v1
	ctrls     []string   // the controller of each of dirs, for cgroup v1
	tasks     []*os.File // cgroup v1: the tasks file of each of dirs, open for writing
	pidsNow   *os.File   // its pids.current file, open for reading; nil without the pids controller
	dirFile   *os.File   // cgroup v2: the group's directory (CLONE_INTO_CGROUP)
	memDir    string
	v2        bool
	memory    int64    // its limits
	pids      int64    //
	oomBefore int64    // OOM kills counted before its sandbox
	owner     *Cgroups // where it goes back when released
}

// Find looks for writable control groups under the ones this process
// is in. It returns nil and the reason when there are none.
func Find() (*Cgroups, error) {
	// The groups of a thread of ours that StartIn does not hold: the
	// process's own. /proc/self names the main thread's, which may be one
	// that StartIn moved into a command's group for a moment.
	runtime.LockOSThread()
	data, err := os.ReadFile("/proc/thread-self/cgroup")
	runtime.UnlockOSThread()
	if err != nil {
		return nil, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	cg := &Cgroups{mounts: map[string]string{}, home: map[string]string{}}
	var reasons []string
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		ctrls, rel := parts[1], parts[2]
		if ctrls == "" { // cgroup v2
			mp := mountPoint(mounts, "cgroup2", "")
			if mp == "" {
				continue
			}
			dir := filepath.Join(mp, rel)
			sub, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			have := strings.Fields(string(sub))
			if !contains(have, "memory") || !contains(have, "pids") {
				reasons = append(reasons, "cgroup v2: memory and pids controllers not delegated to "+dir)
				continue
			}
			if err := probeDir(dir); err != nil {
				reasons = append(reasons, "cgroup v2: "+err.Error())
				continue
			}
			cg.v2 = dir
			continue
		}
		for _, c := range strings.Split(ctrls, ",") {
			if c != "memory" && c != "pids" {
				continue
			}
			mp := mountPoint(mounts, "cgroup", c)
			if mp == "" {
				continue
			}
			dir := filepath.Join(mp, rel)
			if err := probeDir(dir); err != nil {
				reasons = append(reasons, "cgroup v1 "+c+": "+err.Error())
				continue
			}
			if c == "memory" {
				cg.memory = dir
			} else {
				cg.pids = dir
			}
			cg.mounts[c] = mp
			cg.home[c] = dir
		}
	}
	if cg.v2 != "" {
		cg.memory, cg.pids = "", ""
	}
	if cg.v2 == "" && cg.memory == "" && cg.pids == "" {
		if len(reasons) == 0 {
			reasons = append(reasons, "no memory or pids controller found")
		}
		return nil, errors.New(strings.Join(reasons, "; "))
	}
	cg.removeStale()
	return cg, nil
}

// removeStale removes the empty groups that a server which ended without
// Close kept for reuse: their names carry its pid.
func (c *Cgroups) removeStale() {
	for _, parent := range []string{c.v2, c.memory, c.pids} {
		if parent == "" {
			continue
		}
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			if procio.Abandoned(e.Name(), "sandbox-") {
				_ = os.Remove(filepath.Join(parent, e.Name())) // fails if not empty
			}
		}
	}
}

// Memory reports whether memory can be limited by a control group.
func (c *Cgroups) Memory() bool { return c != nil && (c.v2 != "" || c.memory != "") }

// Pids reports whether the process count can be limited by a control group.
func (c *Cgroups) Pids() bool { return c != nil && (c.v2 != "" || c.pids != "") }

// String describes the cgroups in use.
func (c *Cgroups) String() string {
	switch {
	case c == nil:
		return "none"
	case c.v2 != "":
		return "cgroup v2"
	}
	var s []string
	if c.memory != "" {
		s = append(s, "memory")
	}
	if c.pids != "" {
		s = append(s, "pids")
	}
	return "cgroup v1 (" + strings.Join(s, ", ") + ")"
}

// New creates a control group limited to memory bytes (0: no limit) and
// pids processes (0: no limit; less than 0: no limit, but a group all the
// same, that KillAll empties).
func (c *Cgroups) New(memory, pids int64) (*Cgroup, error) {
	c.mu.Lock()
	for i, g := range c.idle {
		if g.memory == memory && g.pids == pids && g.empty() {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			c.mu.Unlock()
			g.oomBefore = g.oomKills()
			return g, nil
		}
	}
	c.mu.Unlock()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("sandbox-%d-%d-%x", os.Getpid(), c.counter.Add(1), rnd)
	g := &Cgroup{memory: memory, pids: pids, owner: c}
	mk := func(parent, ctrl string) (string, error) {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
		g.dirs, g.ctrls = append(g.dirs, dir), append(g.ctrls, ctrl)
		if ctrl == "pids" || (ctrl == "" && c.Pids()) {
			f, err := os.Open(filepath.Join(dir, "pids.current"))
			if err != nil {
				return "", err
			}
			g.pidsNow = f
		}
		if ctrl == "" {
			var err error
			g.dirFile, err = os.Open(dir)
			return dir, err
		}
		tasks, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			return "", err
		}
		g.tasks = append(g.tasks, tasks)
		return dir, nil
	}
	if pids > 0 {
		pids++ // the sandbox's bwrap process, born in the group (see StartIn)
	}
	fail := func(err error) (*Cgroup, error) {
		g.Remove()
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	if c.v2 != "" {
		dir, err := mk(c.v2, "")
		if err != nil {
			return fail(err)
		}
		g.v2, g.memDir = true, dir
		if memory > 0 {
			if err := writeFile(dir, "memory.max", memory); err != nil {
				return fail(err)
			}
			_ = writeFile(dir, "memory.swap.max", 0)
		}
		if pids > 0 {
			if err := writeFile(dir, "pids.max", pids); err != nil {
				return fail(err)
			}
		}
		return g, nil
	}
	if c.memory != "" && memory > 0 {
		dir, err := mk(c.memory, "memory")
		if err != nil {
			return fail(err)
		}
		g.memDir = dir
		if err := writeFile(dir, "memory.limit_in_bytes", memory); err != nil {
			return fail(err)
		}
		// Without swap accounting the file is missing; that is fine.
		_ = writeFile(dir, "memory.memsw.limit_in_bytes", memory)
	}
	if c.pids != "" && pids != 0 {
		dir, err := mk(c.pids, "pids")
		if err != nil {
			return fail(err)
		}
		if pids > 0 {
			if err := writeFile(dir, "pids.max", pids); err != nil {
				return fail(err)
			}
		}
	}
	return g, nil
}

// Add moves the process pid into every controller of the group; what it
// starts from then on is in the group too.
func (g *Cgroup) Add(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup: %w", err)
		}
	}
	return nil
}

// KillAll kills every process of the group with SIGKILL, and those they
// fork meanwhile, until none is left (for at most a second).
func (g *Cgroup) KillAll() {
	if g == nil || len(g.dirs) == 0 {
		return
	}
	// Every process of the group is in each of its directories.
	last := len(g.dirs) - 1
	if g.v2 {
		_ = os.WriteFile(filepath.Join(g.dirs[last], "cgroup.kill"), []byte("1"), 0) // Linux 5.14
	}
	self := os.Getpid()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if g.countsNone() {
			return
		}
		data, err := os.ReadFile(filepath.Join(g.dirs[last], "cgroup.procs"))
		if err != nil {
			return
		}
		pids := strings.Fields(string(data))
		if len(pids) == 0 {
			return
		}
		for _, f := range pids {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && pid != self {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Microsecond) // the kernel releases the killed
	}
}

// countsNone reports whether the pids controller counts no process in the
// group: a counter read through a file kept open (a single value, read
// afresh on every read, unlike a list of pids), charged when a process is
// forked, before it can run, and released when it has been reaped. A
// group without the pids controller, or whose count is not zero, is
// asked for its list of processes.
func (g *Cgroup) countsNone() bool {
	if g.pidsNow == nil {
		return false
	}
	var buf [32]byte
	n, err := g.pidsNow.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return strings.TrimSpace(string(buf[:n])) == "0"
}

// Release hands back a group whose processes have ended: it is kept for
// a next sandbox, or removed. The kernel may take a moment to release the
// last of them: New reuses a group only once it is empty.
func (g *Cgroup) Release() {
	if g == nil {
		return
	}
	if c := g.owner; c != nil {
		c.mu.Lock()
		if !c.closed && len(c.idle) < maxIdle {
			c.idle = append(c.idle, g)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
	g.Remove()
}

// empty reports whether no process is left in the group. Its cgroup.procs
// files are opened afresh: on cgroup v1 an open one goes on answering the
// list of pids it read first for a second after each read.
func (g *Cgroup) empty() bool {
	if g.countsNone() {
		return true
	}
	for _, d := range g.dirs {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(data)) > 0 {
			return false
		}
	}
	return true
}

// Close removes the groups kept for reuse; from then on released groups
// are removed at once.
func (c *Cgroups) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	idle, home := c.idle, c.homeFile
	c.idle, c.closed, c.homeFile = nil, true, nil
	c.mu.Unlock()
	for _, g := range idle {
		g.Remove()
	}
	// A thread that goes home after this opens the file again (threadHome).
	for _, f := range home {
		_ = f.Close()
	}
}

// OOMKilled reports whether the kernel killed a process of the group
// because it exceeded its memory limit, since New returned it.
func (g *Cgroup) OOMKilled() bool {
	return g != nil && g.oomKills() > g.oomBefore
}

// oomKills returns how many processes of the group the kernel has killed
// for exceeding its memory limit.
func (g *Cgroup) oomKills() int64 {
	if g == nil || g.memDir == "" {
		return 0
	}
	name := "memory.oom_control"
	if g.v2 {
		name = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(g.memDir, name))
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		f := strings.Fields(string(line))
		if len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// Remove deletes the group. Its processes must have ended; the last of
// them may take a moment to be released, so Remove retries, at first
// often (it is usually a matter of microseconds), for up to a second.
func (g *Cgroup) Remove() {
	if g == nil {
		return
	}
	for _, f := range g.tasks {
		_ = f.Close()
	}
	if g.pidsNow != nil {
		_ = g.pidsNow.Close()
	}
	if g.dirFile != nil {
		_ = g.dirFile.Close()
	}
	for _, d := range g.dirs {
		wait := 50 * time.Microsecond
		for total := time.Duration(0); total < time.Second; total += wait {
			err := os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(wait)
			wait = min(2*wait, 10*time.Millisecond)
		}
	}
}

// probeDir checks that a child group can be created in dir.
func probeDir(dir string) error {
	probe := filepath.Join(dir, fmt.Sprintf("sandbox-probe-%d", os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Remove(probe)
}

// mountPoint finds the mount point of a cgroup file system in mountinfo: the
// cgroup2 one, or the cgroup v1 hierarchy with controller ctrl.
func mountPoint(mountinfo []byte, fstype, ctrl string) string {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || qf[0] != fstype {
			continue
		}
		if pf[3] != "/" { // a bind mount of a sub-group
			continue
		}
		if ctrl == "" || contains(strings.Split(qf[2], ","), ctrl) {
			return pf[4]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeFile(dir, name string, v int64) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(strconv.FormatInt(v, 10)), 0o644)
}

// Born in the group. Moving a running process into a cgroup v1 group
// (Add) takes a lock global to the kernel, whose writer waits for an RCU
// grace period and slows every fork meanwhile: 0.3 ms on an idle
// machine, over a millisecond while sandboxes start. A thread that moves
// itself (it writes 0 to a tasks file) takes no such lock. So StartIn
// starts the sandbox from a thread of its own that joins the group, forks
// there and goes back: the command's first process is born in the group,
// and everything it starts too. No process of the command is ever outside
// the group. On cgroup v2 the kernel clones it into the group directly.

// StartIn calls start, which starts one process, so that the process is
// born in g, and reports whether it was. start passes the process's
// SysProcAttr to into before it starts it. On cgroup v2 the process is
// cloned into g (CLONE_INTO_CGROUP, Linux 5.7); where that fails, or g
// cannot be joined, start runs again as usual and the caller moves the
// process (Add). On cgroup v1 it runs StartHere on the calling thread,
// locked, whose moment in g costs no other thread a wake-up, or, where
// that is the main thread, on another (see package osthread). When the
// thread cannot leave g, StartIn fails with ErrStranded and the thread
// ends with its goroutine (the caller's: it stays locked to it); a
// process started with Pdeathsig dies with it. The caller ends the
// process it started.
func (g *Cgroup) StartIn(start func(into func(*syscall.SysProcAttr)) error) (born bool, err error) {
	if !g.joins() {
		return g.StartHere(start)
	}
	osthread.Run(func() (keep bool) {
		born, err = g.StartHere(start)
		return errors.Is(err, ErrStranded)
	})
	return born, err
}

// ErrStranded reports that the calling thread could not leave a sandbox's
// control group.
var ErrStranded = errors.New("cgroup: the thread cannot leave the sandbox's group")

// joins reports whether StartIn moves a thread into g (cgroup v1).
func (g *Cgroup) joins() bool { return g != nil && g.owner != nil && len(g.dirs) > 0 && !g.v2 }

// StartHere is StartIn on the calling thread, which the caller has locked
// (runtime.LockOSThread) and keeps as it is, since the process's parent
// is that thread. On cgroup v1 the thread joins g, starts the process and
// goes back; when it cannot go back, StartHere fails with an error
// wrapping ErrStranded and the caller must end the thread (return from
// its goroutine without unlocking it), which the process started, if
// any, does not outlive (Pdeathsig).
func (g *Cgroup) StartHere(start func(into func(*syscall.SysProcAttr)) error) (born bool, err error) {
	asUsual := func(*syscall.SysProcAttr) {}
	switch {
	case g == nil || g.owner == nil || len(g.dirs) == 0:
		return false, start(asUsual)
	case g.v2:
		dir := g.dirFile
		if dir == nil {
			var err error
			if dir, err = os.Open(g.dirs[0]); err != nil {
				return false, start(asUsual)
			}
			defer dir.Close()
		}
		fd := int(dir.Fd())
		if start(func(a *syscall.SysProcAttr) { a.UseCgroupFD, a.CgroupFD = true, fd }) == nil {
			return true, nil
		}
		return false, start(asUsual)
	}
	back, done, err := g.owner.threadHome(g.ctrls)
	if err != nil {
		return false, start(asUsual)
	}
	defer done()
	joined := joinThread(g.tasks) == nil
	if joined {
		err = start(asUsual)
	}
	if berr := g.owner.goHome(g.ctrls, back); berr != nil {
		return false, fmt.Errorf("%w: %w", ErrStranded, berr)
	}
	if !joined {
		err = start(asUsual)
	}
	return joined, err
}

// goHome moves the calling thread back into this process's groups in the
// hierarchies of ctrls through their tasks files back, or, where that
// fails (Close closed one meanwhile), through the files opened again.
func (c *Cgroups) goHome(ctrls []string, back []*os.File) error {
	if joinThread(back) == nil {
		return nil
	}
	// Opened again from the path: a thread that writes to a closed one
	// meanwhile comes here too.
	c.mu.Lock()
	for _, ctrl := range ctrls {
		if f := c.homeFile[ctrl]; f != nil {
			_ = f.Close()
			delete(c.homeFile, ctrl)
		}
	}
	c.mu.Unlock()
	back, done, err := c.threadHome(ctrls)
	if err != nil {
		return err
	}
	defer done()
	return joinThread(back)
}

// joinThread moves the calling thread, alone, into the groups whose
// tasks files are open in tasks.
func joinThread(tasks []*os.File) error {
	for _, f := range tasks {
		if _, err := f.Write([]byte("0")); err != nil {
			return err
		}
	}
	return nil
}

// threadHome returns the tasks files, open for writing, of the groups of
// this process in the cgroup v1 hierarchies of ctrls, in that order: where
// a thread that started a command in a group goes back. Every thread of
// this process is in them but while StartHere holds one elsewhere; a
// thread that cannot go back ends (ErrStranded). The files stay open
// until Close; done closes those opened for this call alone (after Close,
// or where Find saw no group of this process).
func (c *Cgroups) threadHome(ctrls []string) (files []*os.File, done func(), err error) {
	var own []*os.File
	done = func() {
		for _, f := range own {
			_ = f.Close()
		}
	}
	files = make([]*os.File, len(ctrls))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ctrl := range ctrls {
		if f := c.homeFile[ctrl]; f != nil {
			files[i] = f
			continue
		}
		dir := c.home[ctrl]
		if dir == "" {
			dirs, err := c.threadGroups([]string{ctrl})
			if err != nil {
				done()
				return nil, nil, err
			}
			dir = dirs[0]
		}
		f, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			done()
			return nil, nil, err
		}
		files[i] = f
		if c.closed || c.home[ctrl] == "" {
			own = append(own, f)
			continue
		}
		if c.homeFile == nil {
			c.homeFile = map[string]*os.File{}
		}
		c.homeFile[ctrl] = f
	}
	return files, done, nil
}

// threadGroups returns the directories of the groups of the calling
// thread in the cgroup v1 hierarchies of ctrls, in that order.
func (c *Cgroups) threadGroups(ctrls []string) ([]string, error) {
	data, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(ctrls))
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for i, ctrl := range ctrls {
			if mp := c.mounts[ctrl]; mp != "" && contains(strings.Split(parts[1], ","), ctrl) {
				dirs[i] = filepath.Join(mp, parts[2])
			}
		}
	}
	for i, d := range dirs {
		if d == "" {
			return nil, fmt.Errorf("no %s group for this thread", ctrls[i])
		}
	}
	return dirs, nil
}
