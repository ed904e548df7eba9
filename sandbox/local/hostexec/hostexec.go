// Package hostexec runs the commands of a local Vercel Sandbox API
// (package sandbox/local) as processes on the host, without isolation:
// real shells, exit codes, signals and streaming, in the sandbox's
// directory and with an environment built from scratch.
package hostexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
)

// defaultPath is the PATH used when the host has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Executor is an Executor that runs each command as a real process on
// the host, with os/exec. It makes tests realistic (a real shell, real
// exit codes, real signals and real streaming) but it is not a sandbox.
//
// What it does NOT isolate: the process runs on the host as the current user
// (sudo is not emulated: a command with Sudo set runs as the current user
// too, unless RefuseSudo is given), sees the host's whole filesystem
// (absolute paths, in the command name or its arguments, are host paths and
// are not translated into the sandbox directory) and uses the host's network.
// Only two things are per sandbox:
//
//   - the working directory, Cmd.HostCwd (created when missing), so relative
//     paths reach the sandbox's files;
//   - the environment, which is built from scratch and never inherits the
//     host's: PATH (the host's PATH, or Path), HOME (Cmd.Dir),
//     LANG=C.UTF-8, the variables named by PassEnv, and Cmd.Env on top.
//     Secrets in the test process's environment do not leak into commands.
//
// The command name is looked up in the PATH of that environment; relative
// names and relative PATH entries are resolved against the working directory.
// A name that cannot be found fails with exit code 127 and a message on
// standard error, and one that cannot be executed with 126, as in a shell.
//
// Output is copied to Cmd.Stdout and Cmd.Stderr as it arrives, one Write per
// read from the pipe (up to 32 KiB), never waiting for a line end. Standard
// input is empty.
//
// Each command runs in its own session (so without a controlling terminal)
// and process group, and receives no descriptor but standard input, output
// and error, whatever the server inherited. Signal signals the whole group;
// the end of the session kills it with SIGKILL; and when the command's main
// process exits, what is left of its group (background jobs, for instance)
// is killed too. Where a control group is writable (cgroup v1 as root, or
// a cgroup v2 directory with the pids controller delegated), each command
// is born in a group of its own, and every process of the group is killed
// then: even a process that leaves the session and clears its environment.
// On Linux the environment also carries LOCAL_SANDBOX_RUN, a marker unique
// to the command; without a control group every process that carries it is
// killed then, daemons that left the group with setsid included (finding
// them reads the environment of every process of the host, which costs as
// much again as a short command). A process that clears its environment
// then escapes, and so does one running as root that leaves its control
// group (this executor isolates nothing: use package isolated for hostile
// code). Close removes the groups kept for reuse. Wait returns
// once both output pipes are drained, or WaitDelay after the group was
// killed if a process outside the group still holds them.
//
// Account tools (useradd, groupadd, usermod, gpasswd, ...) are refused
// with exit code 1: run on the host they would change the host's users.
//
// Executor needs a Unix system; elsewhere Start returns an error.
type Executor struct {
	path       string
	passEnv    map[string]string
	refuseSudo bool
	waitDelay  time.Duration
	groups     *cgroup.Cgroups // where each command gets a group; nil: none
	groupOnly  bool            // see GroupOnly
}

// Option configures an Executor.
type Option func(*Executor)

// Path sets the PATH given to commands instead of the host's PATH.
// Cmd.Env may still override it.
func Path(path string) Option {
	return func(e *Executor) { e.path = path }
}

// PassEnv copies the named variables from the host environment, as they
// are when New is called, into the commands' environment (for
// example GOCACHE or a proxy setting). Unset variables are skipped.
func PassEnv(names ...string) Option {
	return func(e *Executor) {
		for _, n := range names {
			if v, ok := os.LookupEnv(n); ok {
				e.passEnv[n] = v
			}
		}
	}
}

// RefuseSudo makes commands with Sudo set fail with exit code 1 and a
// message on standard error, instead of running them as the current user.
func RefuseSudo() Option {
	return func(e *Executor) { e.refuseSudo = true }
}

// WaitDelay sets how long Wait waits for the output pipes to close after
// the command's process group is gone (default 1s), once they hold no
// unread output: output already written is read first, however long that
// takes on a loaded machine (up to a minute). Output written later by a
// process that escaped the group is dropped.
func WaitDelay(d time.Duration) Option {
	return func(e *Executor) { e.waitDelay = d }
}

// GroupOnly ends each command through its process group alone: no
// control group and no search for its marker, so a daemon that leaves the
// command's session outlives it. It is for trusted commands known to
// start no daemons, where a control group's two descriptors per running
// command matter. On cgroup v1 as root the group adds about 0.15 ms of CPU
// to a command (docs/scale.md), within the spread of the server's cost of
// a whole command.
func GroupOnly() Option {
	return func(e *Executor) { e.groupOnly = true }
}

// New returns an Executor configured by opts.
func New(opts ...Option) *Executor {
	e := &Executor{
		path:      os.Getenv("PATH"),
		passEnv:   map[string]string{},
		waitDelay: procio.DefaultWaitDelay,
	}
	if e.path == "" {
		e.path = defaultPath
	}
	for _, o := range opts {
		o(e)
	}
	if e.waitDelay <= 0 {
		e.waitDelay = procio.DefaultWaitDelay
	}
	if e.groupOnly {
		return e
	}
	if cg, err := cgroup.Find(); err == nil && cg.Pids() {
		e.groups = cg
	}
	return e
}

// Close removes the control groups the executor keeps for reuse.
// Commands started later still run. A local.Server closes its executor
// when it closes.
func (e *Executor) Close() error {
	e.groups.Close()
	return nil
}

// Start implements Executor. It returns an error only when the command could
// not be started for a reason a shell would not report as an exit code: ctx
// already done, no working directory, an unsupported system, or a failure
// of the host (pipes, process limits).
func (e *Executor) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	s, exited, err := e.prepare(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if exited != nil {
		return exited, nil
	}
	return startLocal(ctx, s)
}

// prepare checks cmd and works out how to start it. A command that a shell
// would refuse (not found, not executable, sudo refused) comes back as an
// exited process.
func (e *Executor) prepare(ctx context.Context, cmd *local.Cmd) (localStart, *procio.Exited, error) {
	if !localSupported {
		return localStart{}, nil, errLocalUnsupported
	}
	if err := ctx.Err(); err != nil {
		return localStart{}, nil, fmt.Errorf("hostexec: session ended before the command started: %w", err)
	}
	dir := cmd.HostCwd
	if dir == "" {
		dir = cmd.Dir
	}
	if dir == "" {
		return localStart{}, nil, errors.New("hostexec: Executor needs Cmd.HostCwd or Cmd.Dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return localStart{}, nil, fmt.Errorf("hostexec: working directory: %w", err)
	}
	stdout, stderr := procio.Writers(cmd.Stdout, cmd.Stderr)
	if cmd.Sudo && e.refuseSudo {
		return localStart{}, &procio.Exited{Code: 1, Stderr: stderr,
			Msg: "sudo: not supported by hostexec.Executor (it cannot become root)\n"}, nil
	}
	if refusedAccountTool(cmd.Name) {
		return localStart{}, &procio.Exited{Code: 1, Stderr: stderr,
			Msg: cmd.Name + ": refused by hostexec.Executor: it would change the host's users and groups\n"}, nil
	}
	env := e.environ(cmd, dir)
	path, code, msg := shellexec.LookPath(cmd.Name, env["PATH"], dir)
	if code == shellexec.NotFound {
		return localStart{}, nil, &local.NotFoundError{Name: cmd.Name, Msg: msg}
	}
	if code != 0 {
		return localStart{}, &procio.Exited{Code: code, Msg: msg, Stderr: stderr}, nil
	}
	return localStart{
		path:      path,
		name:      cmd.Name,
		args:      cmd.Args,
		dir:       dir,
		env:       procio.EnvList(env),
		stdout:    stdout,
		stderr:    stderr,
		waitDelay: e.waitDelay,
		groups:    e.groups,
		sweep:     !e.groupOnly,
	}, nil, nil
}

// localStart is what the platform code needs to start a process.
type localStart struct {
	path, name     string
	args           []string
	dir            string
	env            []string
	stdout, stderr io.Writer
	waitDelay      time.Duration
	groups         *cgroup.Cgroups
	sweep          bool // without a group, end what carries the mark
}

// environ builds the command's environment; see Executor.
func (e *Executor) environ(cmd *local.Cmd, dir string) map[string]string {
	home := cmd.Dir
	if home == "" {
		home = dir
	}
	env := map[string]string{
		"PATH": e.path,
		"HOME": home,
		"LANG": "C.UTF-8",
	}
	maps.Copy(env, e.passEnv)
	maps.Copy(env, cmd.Env)
	return env
}
