package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// How a sandbox starts. bwrap (the outer process, our child) clones the
// sandbox's init process into new namespaces and reports its pid on the
// info descriptor. The init process builds the root filesystem, then
// blocks on the block descriptor before it loads the seccomp filter and
// starts the command. While it blocks, Start applies the rlimits to it
// (prlimit) and moves it into the control group: the command inherits
// both, and never runs a single instruction without them. When the
// command exits, the init process exits with its status and the kernel
// kills every other process of the PID namespace.

// Engine starts sandboxes with one bwrap executable.
type Engine struct {
	path          string
	disableUserns bool // bwrap can forbid new user namespaces inside
}

// NewEngine finds bwrap in the PATH. It fails, wrapping ErrUnavailable,
// when there is none.
func NewEngine() (*Engine, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed: %w", ErrUnavailable, err)
	}
	help, _ := exec.Command(p, "--help").CombinedOutput()
	return &Engine{path: p, disableUserns: strings.Contains(string(help), "--disable-userns")}, nil
}

// Options are the host's side of a sandbox.
type Options struct {
	// Cgroup, when not nil, receives the sandbox's processes.
	Cgroup *Cgroup
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
	cmd *exec.Cmd

	mu    sync.Mutex
	init  *os.Process // the sandbox's init process, through a pidfd
	ended bool        // Wait has reaped bwrap and released init
}

// Descriptors of the bwrap process, from 3 on, in ExtraFiles order; the
// files of /etc follow.
const (
	fdInfo = 3 + iota
	fdBlock
	fdSeccomp
	fdFiles
)

// startRetries is how often Start retries a fork of bwrap that failed
// with EAGAIN.
const startRetries = 20

// Start starts spec in a new sandbox and returns once its command is
// about to start, bound by its limits.
func (e *Engine) Start(spec *Spec, o Options) (*Process, error) {
	files := etcFiles(spec.Hostname)
	var parent, child []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	// info: bwrap writes, we read; block: we write, bwrap reads; the
	// others carry data bwrap reads to its end.
	data := [][]byte{nil, nil, seccompFilter()}
	for _, f := range files {
		data = append(data, f.data)
	}
	for i, d := range data {
		r, w, err := os.Pipe()
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
		if i >= 2 {
			// At most a few KiB, well below the capacity of a pipe.
			if _, err := w.Write(d); err != nil {
				closeAll(parent)
				closeAll(child)
				return nil, err
			}
			w.Close()
		}
	}
	info, block := parent[0], parent[1]
	defer info.Close()
	defer block.Close()

	argv := append([]string{e.path}, e.args(spec, files)...)
	var c *exec.Cmd
	var err error
	for attempt := 0; ; attempt++ {
		c = &exec.Cmd{
			Path:       e.path,
			Args:       argv,
			Env:        spec.Env,
			Dir:        "/",
			Stdout:     o.Stdout,
			Stderr:     o.Stderr,
			ExtraFiles: child,
			SysProcAttr: &syscall.SysProcAttr{
				Setsid:    true,
				Pdeathsig: syscall.SIGKILL,
			},
		}
		o.onTerminal(c)
		err = c.Start()
		// EAGAIN: the host is short of processes for a moment (another
		// sandbox's fork bomb at its limit, say); that passes.
		if !errors.Is(err, syscall.EAGAIN) || attempt == startRetries {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
	closeAll(child)
	if err != nil {
		return nil, fmt.Errorf("isolate: start bwrap: %w", err)
	}
	p := &Process{cmd: c}
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
	if o.Cgroup != nil {
		if err := o.Cgroup.Add(ready.ChildPid); err != nil {
			return abort(err)
		}
	}
	if _, err := block.Write([]byte{1}); err != nil {
		return abort(fmt.Errorf("isolate: release the sandbox: %w", err))
	}
	return p, nil
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
// other signals go to the command's process group.
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
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.init.Pid, p.init.Pid))
	if err != nil {
		return nil // the sandbox has ended
	}
	for _, f := range strings.Fields(string(data)) {
		pid, _ := strconv.Atoi(f)
		if pid <= 0 {
			continue
		}
		// The command leads its own session and process group.
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

// args is bwrap's command line for spec, after argv[0].
func (e *Engine) args(spec *Spec, files []etcFile) []string {
	a := []string{
		"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
		"--cap-drop", "ALL",
	}
	if spec.Network {
		a = append(a, "--share-net")
	}
	if e.disableUserns {
		a = append(a, "--disable-userns")
	}
	uid, gid := DefaultUID, DefaultGID
	if spec.Root {
		uid, gid = 0, 0
	}
	hostname := spec.Hostname
	if hostname == "" {
		hostname = "sandbox"
	}
	a = append(a, "--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid), "--hostname", hostname)
	a = append(a, systemArgs()...)
	for i, f := range files {
		a = append(a, "--perms", "0644", "--file", strconv.Itoa(fdFiles+i), "/etc/"+f.name)
	}
	for _, m := range spec.Writable {
		a = append(a, "--bind", m.Host, m.Path)
	}
	for _, m := range spec.ReadOnly {
		a = append(a, "--ro-bind", m.Host, m.Path)
	}
	a = append(a, "--remount-ro", "/", "--chdir", spec.Cwd,
		"--info-fd", strconv.Itoa(fdInfo), "--block-fd", strconv.Itoa(fdBlock),
		"--seccomp", strconv.Itoa(fdSeccomp))
	a = append(a, "--", spec.Path)
	return append(a, spec.Args...)
}

// etcPaths are the host's files of /etc that programs need, read-only.
// Small regular files are copied into the sandbox's /etc (a write to its
// tmpfs costs far less than a mount), symbolic links recreated, and
// directories mounted. /etc/ssl/private stays out.
var etcPaths = []string{
	"resolv.conf", "nsswitch.conf", "host.conf", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"localtime", "services", "protocols", "mime.types", "ssl/certs", "ssl/openssl.cnf",
	"ca-certificates", "pki/tls/certs", "pki/ca-trust", "crypto-policies", "alternatives", "gai.conf",
}

// maxCopied is the size up to which a file of /etc is copied rather than
// mounted: what a pipe holds before a reader drains it.
const maxCopied = 60 << 10

// shmSize bounds /dev/shm, a tmpfs, which would otherwise take memory
// outside any rlimit.
const shmSize = 64 << 20

// hostEtc is how each of etcPaths reaches the sandbox.
type hostEtc struct {
	mounts []string // bwrap arguments: symbolic links and mounts
	copied []string // names of the files to copy
}

// etcLayout sorts etcPaths once.
var etcLayout = sync.OnceValue(func() hostEtc {
	var h hostEtc
	for _, e := range etcPaths {
		args, fi := mirror("/etc/" + e)
		if fi != nil && fi.Mode().IsRegular() && fi.Size() <= maxCopied {
			h.copied = append(h.copied, e)
			continue
		}
		h.mounts = append(h.mounts, args...)
	}
	return h
})

// mirror returns the bwrap arguments that show the host path p at the
// same path in the sandbox, read-only: a symbolic link is recreated, any
// other file mounted. It also returns what Lstat said of p; nothing when p
// is missing.
func mirror(p string) ([]string, fs.FileInfo) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, nil
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return []string{"--ro-bind", p, p}, fi
	}
	target, err := os.Readlink(p)
	if err != nil {
		return nil, nil
	}
	return []string{"--symlink", target, p}, fi
}

// systemArgs mount what every sandbox shares: the host's system
// directories read-only, /etc with what etcLayout mounts, a fresh /proc,
// a minimal /dev (null, zero, full, random, urandom, tty, pts, shm)
// read-only but for a bounded /dev/shm. It is computed once.
var systemArgs = sync.OnceValue(func() []string {
	var a []string
	for _, d := range systemDirs {
		args, _ := mirror("/" + d)
		a = append(a, args...)
	}
	a = append(a, "--dir", "/etc")
	a = append(a, etcLayout().mounts...)
	return append(a, "--proc", "/proc", "--dev", "/dev",
		"--size", strconv.Itoa(shmSize), "--perms", "1777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev")
})

// etcFile is a file written into the sandbox's /etc.
type etcFile struct {
	name string
	data []byte
}

// etcFiles returns the files of the sandbox's /etc: passwd, group,
// hostname and hosts, generated, and the small files of etcLayout as they
// are now on the host.
func etcFiles(hostname string) []etcFile {
	if hostname == "" {
		hostname = "sandbox"
	}
	files := []etcFile{
		{"passwd", []byte("root:x:0:0:root:/root:/bin/bash\n" +
			fmt.Sprintf("%s:x:%d:%d::/home/%s:/bin/bash\n", DefaultUser, DefaultUID, DefaultGID, DefaultUser) +
			"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")},
		{"group", []byte("root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", DefaultUser, DefaultGID) + "nogroup:x:65534:\n")},
		{"hostname", []byte(hostname + "\n")},
		{"hosts", []byte("127.0.0.1\tlocalhost " + hostname + "\n::1\tlocalhost ip6-localhost ip6-loopback\n")},
	}
	for _, name := range etcLayout().copied {
		data, err := os.ReadFile("/etc/" + name)
		if err == nil && len(data) <= maxCopied {
			files = append(files, etcFile{name, data})
		}
	}
	return files
}
