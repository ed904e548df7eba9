package isolate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
)

// How a sandbox starts. bwrap (the outer process, our child, forked by the
// engine's launcher where Landlock scopes sandboxes) is born in
// the sandbox's control group (cgroup.Cgroup.StartIn; where it cannot be,
// its init process is moved there below). It clones the sandbox's init
// process into new namespaces and reports its pid on the info descriptor.
// The init process builds the root filesystem, then reads the seccomp
// filter to its end before it loads it and starts the command; Start
// closes the pipe that carries it only once it has applied the rlimits to
// the init process (prlimit): the command inherits them and its group, and
// never runs a single instruction without them. When the command exits,
// the init process exits with its status and the kernel kills every other
// process of the PID namespace.

// Engine starts sandboxes with one bwrap executable.
type Engine struct {
	path          string
	disableUserns bool   // bwrap can forbid new user namespaces inside
	users         *users // see EnableUsers; nil: one id
	stage         *stage // the host's files of /etc
	scopeErr      error  // why sandboxes are not scoped (see SocketScope), or nil

	mu     sync.Mutex
	launch *launcher // forks bwrap when sandboxes are scoped; nil until needed
}

// NewEngine finds bwrap in the PATH. It fails, wrapping ErrUnavailable,
// when there is none.
func NewEngine() (*Engine, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed: %w", ErrUnavailable, err)
	}
	help, _ := exec.Command(p, "--help").CombinedOutput()
	return &Engine{path: p, disableUserns: strings.Contains(string(help), "--disable-userns"),
		stage: &stage{src: "/etc", every: stageCheck}, scopeErr: checkScope()}, nil
}

// Close removes what the engine keeps on the host (its copy of the host's
// files of /etc, its launcher once its sandboxes have ended); a later
// Start makes them again.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.launch != nil {
		e.retire(e.launch)
	}
	e.mu.Unlock()
	e.stage.close()
}

// Options are the host's side of a sandbox.
type Options struct {
	// Cgroup, when not nil, receives the sandbox's processes.
	Cgroup *cgroup.Cgroup
	// Stdout and Stderr receive the command's output (and bwrap's own
	// messages when the sandbox cannot be set up).
	Stdout, Stderr *os.File
	// TTY, when not nil, is the slave side of a terminal for the command:
	// its standard input, output and error, and its controlling terminal
	// (Stdout and Stderr are not used). See onTerminal.
	TTY *os.File
}

// Process is a running sandbox.
type Process struct {
	cmd    *exec.Cmd
	engine *Engine
	launch *launcher // that forked bwrap, or nil

	mu    sync.Mutex
	init  *os.Process // the sandbox's init process, through a pidfd
	ended bool        // Wait has reaped bwrap and released init
}

// Descriptors of the bwrap process, from 3 on, in ExtraFiles order; the
// files of /etc follow.
const (
	fdInfo = 3 + iota
	fdSeccomp
	fdUserns // the engine's user namespace, or none
	fdFiles
)

// startRetries is how often Start retries a fork of bwrap that failed
// with EAGAIN.
const startRetries = 20

// Start starts spec in a new sandbox and returns once its command's
// process exists, bound by its limits (or has already ended): a signal
// sent from then on reaches it.
func (e *Engine) Start(spec *Spec, o Options) (_ *Process, err error) {
	l, err := e.acquire()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			e.release(l)
		}
	}()
	var st staged
	if st.dir, st.names, err = e.stage.refresh(); err != nil {
		return nil, err
	}
	own := e.ownEtc(spec)
	if own {
		if err := e.prepareEtc(spec.Etc, spec.Hostname, st.names); err != nil {
			return nil, fmt.Errorf("isolate: the sandbox's /etc: %w", err)
		}
	}
	var files []etcFile
	if !own {
		files = []etcFile{{hostsAt, hostsData(spec.Hostname)}}
	}
	var parent, child []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	// info: bwrap writes, we read; the others carry data bwrap reads to
	// its end: the seccomp filter's only once the sandbox is released.
	data := [][]byte{nil, seccompFilter()}
	for _, f := range files {
		data = append(data, f.data)
	}
	for i, d := range data {
		r, w, err := blockingPipe()
		if err != nil {
			closeAll(parent)
			closeAll(child)
			return nil, err
		}
		if i == 0 {
			parent, child = append(parent, r), append(child, w)
			continue
		}
		parent, child = append(parent, w), append(child, r)
		// At most a few KiB, well below the capacity of a pipe.
		if _, err := w.Write(d); err != nil {
			closeAll(parent)
			closeAll(child)
			return nil, err
		}
		if i >= 2 {
			w.Close()
		}
	}
	info, release := parent[0], parent[1]
	defer info.Close()
	defer release.Close()

	argv := append([]string{e.path}, e.args(spec, files, st)...)
	extra := append(child[:fdUserns-fdInfo:fdUserns-fdInfo], nil)
	if e.users != nil {
		extra[fdUserns-fdInfo] = e.users.ns
	}
	extra = append(extra, child[fdUserns-fdInfo:]...)
	var c *exec.Cmd
	start := func(into func(*syscall.SysProcAttr)) error {
		c = &exec.Cmd{
			Path:       e.path,
			Args:       argv,
			Env:        spec.Env,
			Dir:        "/",
			Stdout:     o.Stdout,
			Stderr:     o.Stderr,
			ExtraFiles: extra,
			SysProcAttr: &syscall.SysProcAttr{
				Setsid:    true,
				Pdeathsig: syscall.SIGKILL,
			},
		}
		o.onTerminal(c)
		into(c.SysProcAttr)
		return c.Start()
	}
	var born bool
	for attempt := 0; ; attempt++ {
		born, err = e.startIn(l, o.Cgroup, start)
		// EAGAIN: the host is short of processes for a moment (another
		// sandbox's fork bomb at its limit, say); that passes. The wait is
		// spent here, not on the launcher, which every start shares.
		if !errors.Is(err, syscall.EAGAIN) || attempt == startRetries {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	closeAll(child)
	if err != nil {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		return nil, fmt.Errorf("isolate: start bwrap: %w", err)
	}
	p := &Process{cmd: c, engine: e, launch: l}
	abort := func(err error) (*Process, error) {
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil, err
	}
	var ready struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(info).Decode(&ready); err != nil || ready.ChildPid <= 0 {
		_ = c.Wait()
		return nil, fmt.Errorf("isolate: bwrap could not set up the sandbox (%v)", c.ProcessState)
	}
	// A pidfd: signals reach this very process, never one that reused
	// its pid.
	if p.init, err = os.FindProcess(ready.ChildPid); err != nil {
		return abort(err)
	}
	if err := setRlimits(ready.ChildPid, spec.Rlimits); err != nil {
		return abort(err)
	}
	if o.Cgroup != nil && !born {
		if err := o.Cgroup.Add(ready.ChildPid); err != nil {
			return abort(err)
		}
	}
	if err := release.Close(); err != nil {
		return abort(fmt.Errorf("isolate: release the sandbox: %w", err))
	}
	if !p.awaitCommand(commandWait) {
		return abort(fmt.Errorf("isolate: the sandbox did not start its command within %v", commandWait))
	}
	return p, nil
}

// commandWait bounds how long Start waits for a released sandbox to fork
// its command, which takes microseconds on an idle host.
const commandWait = time.Minute

// awaitCommand waits until the sandbox's init process, released, has
// forked the command, or has ended, and reports whether it did within
// limit. Until then Signal finds no command to signal: a signal sent as
// soon as Start returned would be lost.
func (p *Process) awaitCommand(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	pause := 10 * time.Microsecond
	for len(p.children()) == 0 && running(p.init.Pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
	return true
}

// children are the pids of the processes the sandbox's init process has
// forked: the command, and what it left behind when it ended.
func (p *Process) children() []int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.init.Pid, p.init.Pid))
	if err != nil {
		return nil // the sandbox has ended
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, _ := strconv.Atoi(f); pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// running reports whether process pid exists and has not exited.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(data, ')') // after the command's name, which may hold anything
	if err != nil || i < 0 || i+2 >= len(data) {
		return false
	}
	state := data[i+2]
	return state != 'Z' && state != 'X'
}

// blockingPipe returns a pipe whose ends stay out of the runtime's
// poller: they are bwrap's, or read and written once here, so the
// registration os.Pipe makes (and undoes on each exec) is only cost.
func blockingPipe() (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("isolate: pipe: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}

// setRlimits lowers the limits of process pid to lims (never raising a
// hard limit above what it is).
func setRlimits(pid int, lims []Rlimit) error {
	for _, l := range lims {
		var old syscall.Rlimit
		if err := prlimit(pid, l.Resource, nil, &old); err != nil {
			return fmt.Errorf("isolate: rlimit %d: %w", l.Resource, err)
		}
		lim := syscall.Rlimit{Cur: min(l.Cur, old.Max), Max: min(l.Max, old.Max)}
		if err := prlimit(pid, l.Resource, &lim, nil); err != nil {
			return fmt.Errorf("isolate: rlimit %d: %w", l.Resource, err)
		}
	}
	return nil
}

func prlimit(pid, resource int, lim, old *syscall.Rlimit) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(resource),
		uintptr(unsafe.Pointer(lim)), uintptr(unsafe.Pointer(old)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Signal sends sig to the sandbox: SIGKILL ends the whole sandbox at once;
// other signals go to the command's process group on a terminal, and to
// the command's process elsewhere (its end ends the sandbox).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	if sig == syscall.SIGKILL {
		err := p.init.Kill() // the kernel kills the rest of the PID namespace
		_ = p.cmd.Process.Kill()
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return err
	}
	for _, pid := range p.children() {
		// On a terminal the command leads its own session and process
		// group (setsid -c); elsewhere it is in the group of the init
		// process, which bwrap made, and gets the signal alone.
		if err := syscall.Kill(-pid, sig); errors.Is(err, syscall.ESRCH) {
			_ = syscall.Kill(pid, sig)
		}
	}
	return nil
}

// Wait waits for the sandbox to end and returns the command's exit code:
// its status, or 128+signal when it was killed by a signal.
func (p *Process) Wait() (int, error) {
	err := p.cmd.Wait()
	p.mu.Lock()
	if !p.ended {
		p.engine.release(p.launch)
	}
	p.ended = true
	_ = p.init.Release()
	p.mu.Unlock()
	st := p.cmd.ProcessState
	if st == nil {
		return -1, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// staged is the stage of the host's files of /etc as a sandbox sees it.
type staged struct {
	dir   string   // on the host
	names []string // the names of etcPaths it holds
}

// args is bwrap's command line for spec, after argv[0]: files are written
// into its /etc, st is shown at stagedEtc.
func (e *Engine) args(spec *Spec, files []etcFile, st staged) []string {
	a := []string{"--die-with-parent", "--new-session", "--cap-drop", "ALL"}
	if e.users != nil {
		// bwrap joins the engine's user namespace, made without the
		// user namespaces it can make.
		a = append(a, "--userns", strconv.Itoa(fdUserns),
			"--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try")
		if !spec.Network {
			a = append(a, "--unshare-net")
		}
	} else {
		a = append(a, "--unshare-all", "--unshare-user")
		if spec.Network {
			a = append(a, "--share-net")
		}
		if e.disableUserns {
			a = append(a, "--disable-userns")
		}
	}
	uid, gid := DefaultUID, DefaultGID
	if spec.Root && e.users == nil {
		uid, gid = 0, 0
	}
	path, args := spec.Path, spec.Args
	if acct := spec.account(); acct != nil && e.users != nil {
		a, path, args = e.switchUser(a, *acct, path, args)
	}
	a = append(a, "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid), "--hostname", orDefault(spec.Hostname))
	a = append(a, systemArgs()...)
	if e.ownEtc(spec) {
		// Its /etc links to the stage (see prepareEtc).
		a = append(a, "--ro-bind", st.dir, stagedEtc, "--bind", spec.Etc, "/etc")
	} else {
		// The stage is its /etc, whose hosts links to the file written
		// here (see writeSharedEtc).
		a = append(a, "--ro-bind", st.dir, "/etc")
		for i, f := range files {
			a = append(a, "--perms", "0644", "--file", strconv.Itoa(fdFiles+i), f.name)
		}
	}
	for _, m := range spec.Writable {
		a = append(a, "--bind", m.Host, m.Path)
	}
	for _, m := range spec.ReadOnly {
		a = append(a, "--ro-bind", m.Host, m.Path)
	}
	a = append(a, "--remount-ro", "/", "--chdir", spec.Cwd,
		"--info-fd", strconv.Itoa(fdInfo), "--seccomp", strconv.Itoa(fdSeccomp))
	if e.users != nil {
		// bwrap leaves the descriptor of --userns open for the command,
		// but closes its --block-fd after one read, whose failure on a
		// namespace it ignores.
		a = append(a, "--block-fd", strconv.Itoa(fdUserns))
	}
	a = append(a, "--", path)
	return append(a, args...)
}

// etcPaths are the host's files of /etc that programs need, read-only,
// through the stage (see stage). /etc/ssl/private stays out.
var etcPaths = []string{
	"resolv.conf", "nsswitch.conf", "host.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"localtime", "services", "protocols", "mime.types", "ssl/certs", "ssl/openssl.cnf",
	"ca-certificates", "pki/tls/certs", "pki/ca-trust", "crypto-policies", "alternatives", "gai.conf",
	"login.defs",
}

// procHostWide are the files of /proc that act on the whole host, as
// bwrap lists them.
var procHostWide = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// shmSize bounds /dev/shm, a tmpfs, which would otherwise take memory
// outside any rlimit.
const shmSize = 64 << 20

// mirror returns the bwrap arguments that show the host path p at dest in
// the sandbox, read-only: a symbolic link is recreated, any other file
// mounted. Nothing when p is missing.
func mirror(p, dest string) []string {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return []string{"--ro-bind", p, dest}
	}
	target, err := os.Readlink(p)
	if err != nil {
		return nil
	}
	return []string{"--symlink", target, dest}
}

// systemArgs mount what every sandbox shares: the host's system
// directories read-only, a fresh /proc with procHostWide read-only, a minimal /dev (null, zero, full,
// random, urandom, tty, pts, shm) read-only but for a bounded /dev/shm.
// They are computed once.
var systemArgs = sync.OnceValue(func() []string {
	var a []string
	for _, d := range systemDirs {
		a = append(a, mirror("/"+d, "/"+d)...)
	}
	// bwrap makes the host-wide files of /proc read-only only where it
	// could write them itself; the default user of a server running as
	// root is the host's root, which the kernel lets write settings there
	// (kernel.core_pattern), and the sandbox's root overrides permissions
	// on files of the host's root (CAP_DAC_OVERRIDE with the host's root
	// mapped): they are made read-only here, whatever bwrap decided.
	a = append(a, "--proc", "/proc")
	for _, p := range procHostWide {
		a = append(a, "--ro-bind-try", p, p)
	}
	return append(a, "--dev", "/dev", "--size", strconv.Itoa(shmSize), "--perms", "1777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev")
})

// etcFile is a file written into the sandbox's filesystem.
type etcFile struct {
	name string
	data []byte
}

// hostsAt is where a sandbox without its own /etc finds its hosts file,
// written for it: the stage's hosts links there.
const hostsAt = "/run/hosts"

// writeSharedEtc writes into the stage at dir the files of /etc that every
// sandbox without its own /etc shares: the accounts, a hostname that
// links to the kernel's (bwrap's --hostname) and a hosts that links to
// hostsAt.
func writeSharedEtc(dir string) error {
	for _, f := range []etcFile{
		{"passwd", []byte("root:x:0:0:root:/root:/bin/bash\n" +
			fmt.Sprintf("%s:x:%d:%d::/home/%s:/bin/bash\n", DefaultUser, DefaultUID, DefaultGID, DefaultUser) +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{"group", []byte("root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", DefaultUser, DefaultGID) + "nogroup:x:65534:\n")},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	if err := os.Symlink("/proc/sys/kernel/hostname", filepath.Join(dir, "hostname")); err != nil {
		return err
	}
	return os.Symlink(hostsAt, filepath.Join(dir, "hosts"))
}

// hostsData is the hosts file of a sandbox named hostname.
func hostsData(hostname string) []byte {
	return []byte("127.0.0.1\tlocalhost " + orDefault(hostname) + "\n::1\tlocalhost ip6-localhost ip6-loopback\n")
}

// orDefault is hostname, or the default host name when it is empty.
func orDefault(hostname string) string {
	if hostname == "" {
		return "sandbox"
	}
	return hostname
}
