// Package isolated runs the commands of a local Vercel Sandbox API
// (package sandbox/local) each in a sandbox of its own, on bubblewrap
// (bwrap): Linux namespaces, a private root filesystem, no capability,
// no controlling terminal but a terminal of its own for an interactive
// session (StartTTY), and per-command limits. Best picks it where
// this system allows it and falls back to package hostexec elsewhere,
// saying why.
//
// # Security model
//
// The executor is meant to run code you do not trust, such as code an agent
// wrote, on your own machine. Its engine is bubblewrap, the sandbox Flatpak
// uses: each command gets its own user, mount, PID, network, UTS, IPC and
// cgroup namespaces, a new session, no capability (but for the few of a
// sandbox's root over its own sandbox), no new privileges, and dies with
// the server. This package adds only what bwrap does not do: the layout of
// the sandbox's filesystem, limits, a seccomp filter against setuid and
// setgid files, a Landlock domain, and the network policy. It needs Linux,
// bwrap and unprivileged user namespaces.
//
// What holds, whatever a command does:
//
//   - no host file: the host's /usr, /bin, /lib* and a few files of /etc
//     read-only (one private copy that follows the host), the sandbox's own
//     tree read-write, nothing else (not your home, /tmp, /etc/shadow);
//   - no host descriptor or terminal: only standard input (empty), output
//     and error; /dev/tty fails, and an interactive command gets a new
//     pseudo-terminal of its own, never the server's;
//   - no host process: a PID namespace of its own, and no process started
//     by a command outlives it or its session, daemons included;
//   - no host network under the default policy: its own loopback only.
//     allow-all gives the host's network, TCP services on its loopback
//     included, but no host unix socket: no socket file of the host is
//     mounted (unless ReadOnly mounts one), and a Landlock domain (Linux
//     6.12, ABI 6) keeps commands from the abstract sockets made outside
//     the executor's sandboxes ([Executor.ScopedSockets] says where it cannot);
//   - no setuid or setgid file (seccomp, amd64 and arm64), and no write to
//     /proc/sys, /proc/sysrq-trigger, /proc/irq or /proc/bus;
//   - bounded memory, processes, CPU time and file size per command (Memory,
//     Procs, CPUTime, FileSize; control groups where one is writable, else
//     rlimits), and a disk quota per sandbox (local.WithDiskQuota);
//   - users of its own, none of the host's: where the server runs as root, a
//     sandbox has its own writable /etc and ids 0 to 65535 mapped to host ids
//     no account uses, but for the default user 1000, which is the server's
//     host user; its root holds a few capabilities over its own mounts and
//     processes only, and no sandbox can make a user namespace (see [Executor.Users]).
//
// What it does not guarantee: it is not a virtual machine. Commands share
// the host's kernel, so a kernel flaw reachable from an unprivileged user
// namespace is a way out; CPU time is limited per process, not shared
// fairly; without a writable control group the 64 MiB of /dev/shm are not
// counted, memory is bound as address space, and processes by
// RLIMIT_NPROC, which does not bind a server running as root (run the
// server as an ordinary user there, as where the kernel lacks Landlock ABI
// 6: a host service that trusts its peer's uid would take a command under
// allow-all for the server's user).
//
// The evidence is a suite of hostile probes (TestProbe* in this package),
// each asserting what happened on the host: go test -run Probe -v. The
// repository's docs/security.md gives the model in full, with each probe and
// what the server itself guarantees.
package isolated

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/isolate"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
)

// ErrUnavailable reports that Executor cannot isolate
// commands on this system. The error that wraps it names the reason (not
// Linux, user namespaces disabled, a mount refused by the kernel, ...).
var ErrUnavailable = errors.New("isolated: isolation unavailable")

// Markers the Executor writes as the last line of a command's
// standard error when a limit ended it. OutcomeOf recognises them.
const (
	MemoryLimitMarker = "isolated: memory limit exceeded"
	CPULimitMarker    = "isolated: CPU time limit exceeded"
)

// Defaults of the Executor's per-command limits.
const (
	DefaultMemory   = 2 << 30 // bytes
	DefaultProcs    = 1024
	DefaultFileSize = 4 << 30 // bytes
)

// defaultSandboxPath is the PATH of commands inside an isolated sandbox.
const defaultSandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Executor is an Executor that runs each command in a bubblewrap sandbox:
// its own Linux namespaces (user, mount, PID, network, UTS, IPC, cgroup),
// a new session without a controlling terminal, no capability, no new
// privileges, and death with the server. It needs no root privileges,
// only bwrap (the Debian and Ubuntu package bubblewrap) and a kernel that
// allows unprivileged user namespaces.
//
// What a command sees:
//
//   - a root filesystem of its own: the host's /usr, /bin, /sbin and /lib*
//     read-only (symbolic links such as /bin -> usr/bin preserved), a few
//     files of /etc (resolv.conf, ld.so.cache, certificates, ...) in a
//     read-only copy that the executor keeps (one for all sandboxes,
//     private to the server, updated when the host replaces one of them),
//     which is /etc, with a generated passwd and group, hostname linking to
//     the kernel's and hosts to a generated /run/hosts (or, with users, the
//     sandbox's own writable /etc, linking to the copy at /run/host-etc), a
//     fresh /proc with /proc/sys read-only, and a minimal read-only /dev
//     (null, zero, full, random, urandom, tty, pts) with a 64 MiB /dev/shm.
//     Nothing else of the host is visible;
//   - the sandbox's own tree, read-write: every top-level directory of the
//     sandbox's host directory (Cmd.Dir) is mounted at the same sandbox path,
//     so /vercel/sandbox, /tmp, /home/vercel-sandbox and /root are the very
//     directories the file API reads and writes, and they survive a stop and
//     resume like any file of the sandbox. Files the file API writes under
//     /usr, /etc, /proc, /dev, /sys, /bin, /sbin or /lib* are not visible to
//     commands. Everything else is read-only;
//   - no descriptor but standard input (empty), output and error, whatever
//     the server inherited, and no terminal: /dev/tty fails with ENXIO. A
//     command of an interactive session (StartTTY) has a new
//     pseudo-terminal of its own instead, as its standard streams and
//     controlling terminal, never the server's;
//   - its own process tree: killing the command, its timeout or the end of
//     the session kills the whole PID namespace, daemons included, and so
//     does the end of the command's main process (background jobs);
//   - the network: loopback only (its own, not the host's), unless the
//     client set the sandbox's network policy to allow-all
//     (Cmd.NetworkPolicy), which gives the host's network but not the
//     host's abstract unix sockets, where Landlock scopes them out (see
//     ScopedSockets). deny-all and custom policies get loopback only:
//     domain and subnet rules are not emulated. HostNetwork opens the
//     network for every command. A sandbox without a policy is reported
//     as deny-all, or allow-all with HostNetwork (DefaultNetworkPolicy);
//   - a user: uid 1000 (vercel-sandbox, home /home/vercel-sandbox) or, with
//     sudo, uid 0 (root, home /root). uid 1000 is the host user running the
//     server, so that the sandbox's tree stays writable by the commands and
//     by the file API alike. Where the server runs as root (see Users), the
//     sandbox has its own writable /etc (Cmd.EtcDir) and ids 0 to 65535, so
//     useradd, groupadd, usermod, chown and sudo -u work as on the image;
//     root and the users it makes are unprivileged host ids, and root holds
//     a few capabilities that act on the sandbox's own files and processes
//     only. Elsewhere uid 0 is the server's host user too, without any
//     capability, and sudo -u fails. A command named sudo is played by the
//     executor (no program can gain privileges inside). A seccomp filter
//     refuses to make any file setuid or setgid (on amd64 and arm64), so
//     nothing a command leaves behind runs with the server's privileges.
//
// Namespaces are created per command, not per session: processes of two
// commands of a session do not see each other, and a server started by a
// detached command is reachable by the other commands only on the host
// network (allow-all). Files are shared, as described above.
//
// Limits per command: memory (Memory; a cgroup when one is
// writable, else RLIMIT_AS, which limits address space rather than resident
// memory), processes (Procs; a pids cgroup when writable, and
// RLIMIT_NPROC, which does not bind when the server runs as root), CPU
// time (CPUTime, RLIMIT_CPU) and file size (FileSize,
// RLIMIT_FSIZE). A command that exceeds its memory gets MemoryLimitMarker
// as the last line of its standard error: with a cgroup it was killed (exit
// code 137); with RLIMIT_AS an allocation failed and the command's own exit
// code is kept (the marker is added when the command failed and its standard
// error looks like an allocation failure). One that exceeds its CPU time
// gets CPULimitMarker (exit code 152, SIGXCPU). See OutcomeOf. The limits
// are set on the sandbox's init process before the command starts, so they
// bind the command and every process it starts.
//
// The environment is built from scratch: PATH (a standard one, or
// Path), HOME, USER, LANG=C.UTF-8, the variables named by
// PassEnv and Cmd.Env on top.
//
// Paths are expected in the server's default virtual mode
// (WithHostPaths(false)); in host-path mode the sandbox root is Cmd.Dir.
// This is isolation by namespaces on the host's kernel, not a virtual
// machine: a kernel flaw reachable from an unprivileged user namespace is
// a way out.
type Executor struct {
	memory    int64
	procs     int64
	cpu       time.Duration
	fileSize  int64
	network   bool
	cgroups   bool
	path      string
	passEnv   map[string]string
	readOnly  []isolate.Mount
	waitDelay time.Duration

	cg          *cgroup.Cgroups // nil: rlimits only
	cgReason    string
	engine      *isolate.Engine
	usersReason string // why the sandboxes have one user, when they do
}

// Option configures an Executor.
type Option func(*Executor)

// Memory limits each command's memory to n bytes (default
// DefaultMemory). Zero or less removes the limit.
func Memory(n int64) Option { return func(e *Executor) { e.memory = n } }

// Procs limits each command to n processes and threads (default
// DefaultProcs). Zero or less removes the limit.
func Procs(n int) Option { return func(e *Executor) { e.procs = int64(n) } }

// CPUTime limits the CPU time of each process of a command
// (default: none). The kernel counts whole seconds, rounded up.
func CPUTime(d time.Duration) Option {
	return func(e *Executor) { e.cpu = d }
}

// FileSize limits the size of any file a command writes (default
// DefaultFileSize). Zero or less removes the limit.
func FileSize(n int64) Option { return func(e *Executor) { e.fileSize = n } }

// HostNetwork gives every command the host's network, whatever the
// sandbox's network policy.
func HostNetwork() Option { return func(e *Executor) { e.network = true } }

// DefaultNetworkPolicy returns the network policy that commands of a
// sandbox with none get, as the server reports it (local.NetworkReporter):
// "deny-all" (their own loopback only), or "allow-all" with HostNetwork.
func (e *Executor) DefaultNetworkPolicy() string {
	if e.network {
		return "allow-all"
	}
	return "deny-all"
}

// NoCgroups limits resources with rlimits only, even where control
// groups are writable.
func NoCgroups() Option { return func(e *Executor) { e.cgroups = false } }

// Path sets the PATH given to commands (Cmd.Env may override it).
func Path(path string) Option { return func(e *Executor) { e.path = path } }

// PassEnv copies the named host variables, as they are when the
// executor is created, into the commands' environment. Unset variables are
// skipped.
func PassEnv(names ...string) Option {
	return func(e *Executor) {
		for _, n := range names {
			if v, ok := os.LookupEnv(n); ok {
				e.passEnv[n] = v
			}
		}
	}
}

// ReadOnly makes the host path hostPath (a directory or a file)
// visible read-only at sandboxPath in every sandbox, for a toolchain that
// lives outside /usr, say. Both must be absolute.
func ReadOnly(hostPath, sandboxPath string) Option {
	return func(e *Executor) {
		e.readOnly = append(e.readOnly, isolate.Mount{Host: hostPath, Path: sandboxPath})
	}
}

// WaitDelay sets how long Wait waits for the output pipes after the
// sandbox ended (default 1s), once they hold no unread output.
func WaitDelay(d time.Duration) Option {
	return func(e *Executor) { e.waitDelay = d }
}

// CgroupMemory reports whether memory is limited by a control group, which
// bounds resident memory, rather than by RLIMIT_AS, which bounds address
// space: runtimes that reserve much more address space than they use (V8,
// the JVM, Go) need a larger Memory under RLIMIT_AS.
func (e *Executor) CgroupMemory() bool { return e.memory > 0 && e.cg.Memory() }

// Limits describes how the executor enforces its limits, for logs: for
// example "memory 2048 MiB (cgroup v1 (memory, pids)), procs 1024, ...".
func (e *Executor) Limits() string {
	var b strings.Builder
	how := "rlimit address space"
	if e.cg.Memory() {
		how = e.cg.String()
	}
	b.WriteString("memory ")
	if e.memory > 0 {
		b.WriteString(itoa(e.memory>>20) + " MiB (" + how + ")")
	} else {
		b.WriteString("unlimited")
	}
	b.WriteString(", procs ")
	if e.procs > 0 {
		how := "rlimit"
		if e.cg.Pids() {
			how = e.cg.String()
		}
		b.WriteString(itoa(e.procs) + " (" + how + ")")
	} else {
		b.WriteString("unlimited")
	}
	if e.cpu > 0 {
		b.WriteString(", cpu " + e.cpu.String())
	}
	if e.fileSize > 0 {
		b.WriteString(", file size " + itoa(e.fileSize>>20) + " MiB")
	}
	if e.cg == nil && e.cgReason != "" {
		b.WriteString("; no cgroups: " + e.cgReason)
	}
	return b.String()
}

// Users reports whether the sandboxes have several users (useradd,
// sudo -u), and why not when they do not.
func (e *Executor) Users() (bool, string) { return e.engine.Users(), e.usersReason }

// ScopedSockets reports whether commands are kept from the host's
// abstract unix sockets (Landlock, Linux 6.12 or later), and why not when
// they are not. It matters with the host's network only (allow-all or
// HostNetwork): elsewhere a command has a network namespace of its own.
func (e *Executor) ScopedSockets() (bool, string) {
	err := e.engine.SocketScope()
	if err == nil {
		return true, ""
	}
	return false, strings.TrimPrefix(err.Error(), isolate.ErrNoScope.Error()+": ")
}

// Mode names the executor as Best does: "isolated", followed, where
// commands with the host's network reach the host's abstract unix
// sockets, by why in parentheses.
func (e *Executor) Mode() string {
	if ok, why := e.ScopedSockets(); !ok {
		return "isolated (allow-all reaches the host's abstract unix sockets: " + why + ")"
	}
	return "isolated"
}

// Close removes what the executor keeps between commands (control groups
// kept for reuse, its copy of the host's files of /etc). Commands started
// later still run. A local.Server
// closes its executor when it closes.
func (e *Executor) Close() error {
	e.cg.Close()
	e.engine.Close()
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// newIsolated applies the defaults and opts.
func newIsolated(opts []Option) *Executor {
	e := &Executor{
		memory:    DefaultMemory,
		procs:     DefaultProcs,
		fileSize:  DefaultFileSize,
		cgroups:   true,
		path:      defaultSandboxPath,
		passEnv:   map[string]string{},
		waitDelay: procio.DefaultWaitDelay,
	}
	for _, o := range opts {
		o(e)
	}
	if e.waitDelay <= 0 {
		e.waitDelay = procio.DefaultWaitDelay
	}
	return e
}

// Best returns an Executor configured by opts when this
// system allows it, and its Mode ("isolated", or with a note on what it
// does not hold here); otherwise a hostexec.Executor and mode
// "host (<reason isolation is unavailable>)".
func Best(opts ...Option) (exec local.Executor, mode string) {
	iso, err := New(opts...)
	if err != nil {
		reason := strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": ")
		return hostexec.New(), "host (" + reason + ")"
	}
	return iso, iso.Mode()
}

// Outcome classifies how a command ended.
type Outcome int

const (
	// OutcomeExited: the command ended on its own or by a signal, not by a
	// limit of the executor.
	OutcomeExited Outcome = iota
	// OutcomeMemoryLimit: the command exceeded its memory limit.
	OutcomeMemoryLimit
	// OutcomeCPULimit: the command exceeded its CPU time limit.
	OutcomeCPULimit
)

// String returns "exited", "memory limit" or "cpu limit".
func (o Outcome) String() string {
	switch o {
	case OutcomeMemoryLimit:
		return "memory limit"
	case OutcomeCPULimit:
		return "cpu limit"
	}
	return "exited"
}

// OutcomeOf tells from a finished command's exit code and standard error
// whether an Executor limit ended it. It works on what any client
// sees through the API: the executor marks the last line of standard error.
// A command timeout is not an outcome here: the server kills the command
// (exit code 137) and records it (CommandInfo.TimedOut), and the client
// knows it set one.
func OutcomeOf(exitCode int, stderr string) Outcome {
	if exitCode == 0 {
		return OutcomeExited
	}
	last := strings.TrimRight(stderr, "\n")
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	switch {
	case strings.HasPrefix(last, MemoryLimitMarker):
		return OutcomeMemoryLimit
	case strings.HasPrefix(last, CPULimitMarker):
		return OutcomeCPULimit
	}
	return OutcomeExited
}
