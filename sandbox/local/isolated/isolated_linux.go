package isolated

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/isolate"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
)

// New returns an Executor configured by opts. It
// starts one sandbox to check that this system allows it, and returns an
// error wrapping ErrUnavailable, with the reason, when not.
func New(opts ...Option) (*Executor, error) {
	e := newIsolated(opts)
	engine, err := isolate.NewEngine()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	e.engine = engine
	if err := engine.EnableUsers(); err != nil {
		e.usersReason = err.Error()
	}
	if e.cgroups && (e.memory > 0 || e.procs > 0) {
		cg, err := cgroup.Find()
		if err != nil {
			e.cgReason = err.Error()
		} else {
			e.cg = cg
		}
	}
	err = e.probe()
	if err != nil && engine.Users() {
		// One user still isolates.
		e.usersReason = "a sandbox with several users failed: " + err.Error()
		e.engine.Close()
		if e.engine, err = isolate.NewEngine(); err == nil {
			err = e.probe()
		}
	}
	if err != nil {
		e.engine.Close()
		e.cg.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return e, nil
}

// probe runs a trivial command in a sandbox.
func (e *Executor) probe() error {
	dir, err := os.MkdirTemp("", "sandboxtest-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var stderr strings.Builder
	// Without control groups: an executor that is never used keeps none.
	bare := *e
	bare.cg = nil
	p, err := bare.Start(context.Background(), &local.Cmd{
		Name: "sh", Args: []string{"-c", "exit 0"}, Dir: dir, Cwd: "/vercel/sandbox", Stderr: &stderr,
	})
	if err != nil {
		return err
	}
	code, err := p.Wait()
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("a trivial command failed with exit code %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// reservedTop are top-level sandbox directories that the sandbox's tree
// does not provide.
var reservedTop = map[string]bool{
	"usr": true, "bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true,
	"etc": true, "proc": true, "dev": true, "sys": true,
	"run": true, // where a sandbox with its own /etc finds the host's files of /etc
}

// Start implements Executor. It returns once the command runs inside its
// sandbox. A command that cannot be found is a *local.NotFoundError; one
// that cannot be executed ends with exit code 126 and a message, as in a
// shell; any other error means the sandbox could not be set up.
func (e *Executor) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	return e.start(ctx, cmd, nil)
}

// start starts cmd as Start does: with pipes as its standard output and
// error, or on a new terminal of size tty when tty is not nil (a
// *ttyProcess then, unless the command was not found).
func (e *Executor) start(ctx context.Context, cmd *local.Cmd, tty *ttySize) (local.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("isolated: session ended before the command started: %w", err)
	}
	if cmd.Dir == "" {
		return nil, errors.New("isolated: Executor needs Cmd.Dir")
	}
	root := cmd.Dir
	cwd := cmd.Cwd
	if rel, err := filepath.Rel(root, cwd); err == nil && filepath.IsAbs(cwd) && filepath.IsLocal(rel) || cwd == root {
		// Host-path mode: the sandbox's root is its directory.
		cwd = "/" + filepath.ToSlash(rel)
		if cwd == "/." {
			cwd = "/"
		}
	}
	if cwd == "" {
		cwd = "/vercel/sandbox"
	}
	cwd = path.Clean("/" + cwd)
	stdout, stderr := procio.Writers(cmd.Stdout, cmd.Stderr)
	var as *passwdEntry
	if cmd.Name == "sudo" {
		run, ent, msg := e.asSudo(cmd)
		if msg != "" {
			return &procio.Exited{Code: 1, Msg: msg, Stderr: stderr}, nil
		}
		cmd, as = run, ent
	}
	if done, msg := chmodSetgid(cmd); done {
		code := 0
		if msg != "" {
			code = 1
		}
		return &procio.Exited{Code: code, Msg: msg, Stderr: stderr}, nil
	}

	tree, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("isolated: sandbox tree: %w", err)
	}
	defer tree.Close()
	// Through an os.Root: a link that a command planted in the tree never
	// leads these calls out of it.
	made := []string{"vercel/sandbox", "tmp", "home/" + isolate.DefaultUser, "root", "shared"}
	for _, d := range made {
		if err := tree.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("isolated: prepare sandbox tree: %w", err)
		}
	}
	_ = tree.Chmod("tmp", 0o777|fs.ModeSticky)
	if e.engine.Users() {
		// The sandbox's root owns /root, as on the image.
		e.giveToRoot(tree, "root")
	}
	if rel := strings.TrimPrefix(cwd, "/"); !slices.Contains(made, rel) && !reservedTop[topOf(rel)] && rel != "" {
		if err := tree.MkdirAll(rel, 0o755); err != nil {
			return nil, fmt.Errorf("isolated: working directory: %w", err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("isolated: read sandbox tree: %w", err)
	}
	var writable []isolate.Mount
	for _, ent := range entries {
		if ent.IsDir() && !reservedTop[ent.Name()] {
			writable = append(writable, isolate.Mount{Host: filepath.Join(root, ent.Name()), Path: "/" + ent.Name()})
		}
	}
	env := e.environ(cmd, as)
	spec := &isolate.Spec{
		Name:     cmd.Name,
		Args:     cmd.Args,
		Env:      procio.EnvList(env),
		Cwd:      cwd,
		Root:     cmd.Sudo,
		Etc:      cmd.EtcDir,
		Hostname: hostnameFor(cmd.SandboxName),
		Writable: writable,
		ReadOnly: e.readOnly,
		Rlimits:  e.rlimits(),
		Network:  e.network || cmd.NetworkPolicy == "allow-all",
	}
	if as != nil {
		spec.As = &as.acct
	}
	if code, msg := spec.LookPath(env["PATH"]); code != 0 {
		if code == shellexec.NotFound && tty == nil {
			// The server answers as its mode says: hosted Vercel's
			// executable_not_found, or the shell's exit 127 (as a terminal
			// always shows it).
			return nil, &local.NotFoundError{Name: cmd.Name, Msg: msg}
		}
		return &procio.Exited{Code: code, Msg: msg, Stderr: stderr}, nil
	}

	return e.launch(ctx, spec, tty, stdout, stderr)
}

// topOf is the first element of rel, a slash-separated relative path.
func topOf(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

// ttySize is the size of a terminal.
type ttySize struct{ rows, cols int }

// launch starts spec in its sandbox: on a new terminal of size tty when
// tty is not nil, else with pipes as standard output and error. Its output
// goes to stdout and stderr (a terminal's to stderr, the same writer).
func (e *Executor) launch(ctx context.Context, spec *isolate.Spec, tty *ttySize, stdout, stderr io.Writer) (local.Process, error) {
	if tty != nil {
		master, slave, err := procio.OpenTTY(tty.rows, tty.cols)
		if err != nil {
			return nil, fmt.Errorf("isolated: %w", err)
		}
		spec.UseTerminal()
		// One output, the master: it is read and drained as a pipe would be.
		p, err := e.run(ctx, spec, isolate.Options{TTY: slave}, master, master, stderr, stderr)
		if err != nil {
			return nil, err
		}
		return &ttyProcess{isolatedProcess: p, Terminal: procio.Terminal{Master: master}}, nil
	}
	outR, outW, errR, errW, err := procio.Pipes()
	if err != nil {
		return nil, fmt.Errorf("isolated: %w", err)
	}
	p, err := e.run(ctx, spec, isolate.Options{Stdout: outW, Stderr: errW}, outR, errR, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// run starts spec in its sandbox, with its control group, on the streams
// of o, whose files it closes: they are the child's. outR and errR are
// their read ends (one file for a terminal), pumped to stdout and stderr;
// they are closed when run fails.
func (e *Executor) run(ctx context.Context, spec *isolate.Spec, o isolate.Options, outR, errR *os.File, stdout, stderr io.Writer) (*isolatedProcess, error) {
	closeChild := func() {
		for _, f := range []*os.File{o.Stdout, o.Stderr, o.TTY} {
			if f != nil {
				f.Close()
			}
		}
	}
	fail := func(err error) (*isolatedProcess, error) {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("isolated: %w", err)
	}
	var err error
	if o.Cgroup, err = e.newCgroup(); err != nil {
		closeChild()
		return fail(err)
	}
	procio.CloseInherited()
	iso, err := e.engine.Start(spec, o)
	closeChild()
	if err != nil {
		// bwrap has exited: what it said is all in the pipe (or on the
		// terminal), unless what it started holds it for a moment.
		_ = errR.SetReadDeadline(time.Now().Add(e.waitDelay))
		said, _ := io.ReadAll(io.LimitReader(errR, 4<<10))
		o.Cgroup.Release()
		if msg := strings.TrimSpace(string(said)); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return fail(err)
	}
	p := &isolatedProcess{
		iso:       iso,
		cg:        o.Cgroup,
		stderr:    stderr,
		outR:      outR,
		errR:      errR,
		outDone:   make(chan struct{}),
		errDone:   make(chan struct{}),
		waitDelay: e.waitDelay,
		afterDone: make(chan struct{}),
	}
	errW := stderr
	if e.memory > 0 && !e.cg.Memory() {
		p.watch = &allocWatcher{w: stderr}
		errW = p.watch
	}
	if outR == errR {
		// A terminal: one stream, in which allocation failures show too.
		p.errDone = p.outDone
		go procio.Pump(outR, errW, p.outDone)
	} else {
		go procio.Pump(outR, stdout, p.outDone)
		go procio.Pump(errR, errW, p.errDone)
	}
	p.stopAfter = context.AfterFunc(ctx, func() {
		defer close(p.afterDone)
		_ = p.Signal(int(syscall.SIGKILL))
	})
	return p, nil
}

// newCgroup returns a new control group with the executor's limits, or
// nil when control groups do not apply.
func (e *Executor) newCgroup() (*cgroup.Cgroup, error) {
	if e.cg == nil {
		return nil, nil
	}
	var mem, pids int64
	if e.cg.Memory() {
		mem = e.memory
	}
	if e.cg.Pids() {
		pids = e.procs
	}
	if mem == 0 && pids == 0 {
		return nil, nil
	}
	return e.cg.New(mem, pids)
}

// rlimits are the limits applied in every sandbox.
func (e *Executor) rlimits() []isolate.Rlimit {
	lims := []isolate.Rlimit{{Resource: syscall.RLIMIT_CORE}}
	set := func(res int, v uint64) {
		lims = append(lims, isolate.Rlimit{Resource: res, Cur: v, Max: v})
	}
	if e.memory > 0 && !e.cg.Memory() {
		set(syscall.RLIMIT_AS, uint64(e.memory))
	}
	if e.procs > 0 {
		set(rlimitNproc, uint64(e.procs))
	}
	if e.cpu > 0 {
		// SIGXCPU at the soft limit; SIGKILL a second later if ignored.
		secs := uint64((e.cpu + time.Second - 1) / time.Second)
		lims = append(lims, isolate.Rlimit{Resource: syscall.RLIMIT_CPU, Cur: secs, Max: secs + 1})
	}
	if e.fileSize > 0 {
		set(syscall.RLIMIT_FSIZE, uint64(e.fileSize))
	}
	return lims
}

// rlimitNproc is RLIMIT_NPROC, which package syscall does not name.
const rlimitNproc = 6

// hostnameFor derives a valid host name from a sandbox name.
func hostnameFor(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
		if b.Len() == 63 {
			break
		}
	}
	if b.Len() == 0 {
		return "sandbox"
	}
	return b.String()
}

// isolatedProcess is a running sandbox.
type isolatedProcess struct {
	iso       *isolate.Process
	cg        *cgroup.Cgroup
	stderr    io.Writer
	watch     *allocWatcher
	outR      *os.File
	errR      *os.File
	outDone   chan struct{}
	errDone   chan struct{}
	waitDelay time.Duration

	stopAfter func() bool
	afterDone chan struct{}

	mu    sync.Mutex
	ended bool
}

// Signal implements Process: SIGKILL ends the whole sandbox; other signals
// go to the command's process group on a terminal, and to the command's
// process elsewhere (whose end ends the sandbox).
func (p *isolatedProcess) Signal(sig int) error {
	if sig < 0 {
		return fmt.Errorf("isolated: invalid signal %d", sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	return p.iso.Signal(syscall.Signal(sig))
}

// Wait implements Process.
func (p *isolatedProcess) Wait() (int, error) {
	code, waitErr := p.iso.Wait()
	// Every process of the sandbox died with its init process, so the
	// pipes close; the delay only guards against the unexpected.
	procio.Drain(p.outR, p.errR, p.outDone, p.errDone, p.waitDelay)
	if !p.stopAfter() {
		<-p.afterDone
	}
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()

	switch {
	case p.cg.OOMKilled():
		_, _ = io.WriteString(p.stderr, "\n"+MemoryLimitMarker+"\n")
	case p.watch != nil && code != 0 && p.watch.seen:
		_, _ = io.WriteString(p.stderr, "\n"+MemoryLimitMarker+"\n")
	case code == 128+int(syscall.SIGXCPU):
		_, _ = io.WriteString(p.stderr, "\n"+CPULimitMarker+"\n")
	}
	p.cg.Release()
	return code, waitErr
}

// allocWatcher passes standard error on and notes whether it reported an
// allocation failure. Only the pump goroutine writes; Wait reads seen after
// the pump has ended.
type allocWatcher struct {
	w    io.Writer
	tail string // the end of the previous write, for patterns split across writes
	seen bool
}

func (a *allocWatcher) Write(p []byte) (int, error) {
	if !a.seen {
		s := a.tail + string(p)
		a.seen = allocFailure(s)
		if len(s) > 64 {
			s = s[len(s)-64:]
		}
		a.tail = s
	}
	return a.w.Write(p)
}

// environ builds a command's environment; see Executor. as is the user
// that sudo -u runs it as, if any.
func (e *Executor) environ(cmd *local.Cmd, as *passwdEntry) map[string]string {
	user, home := isolate.DefaultUser, "/home/"+isolate.DefaultUser
	switch {
	case as != nil:
		user, home = as.name, as.home
	case cmd.Sudo:
		user, home = "root", "/root"
	}
	env := map[string]string{
		"PATH": e.path,
		"HOME": home,
		"USER": user,
		"LANG": "C.UTF-8",
	}
	maps.Copy(env, e.passEnv)
	maps.Copy(env, cmd.Env)
	return env
}

// allocFailure reports whether a chunk of standard error looks like an
// allocation failure, as programs report one when RLIMIT_AS refuses memory.
func allocFailure(s string) bool {
	s = strings.ToLower(s)
	for _, p := range []string{
		"out of memory", "cannot allocate memory", "memoryerror", "bad_alloc",
		"heap out of memory", "failed to reserve virtual memory", "allocation failed",
		"memory exhausted", "fatal process oom",
	} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
