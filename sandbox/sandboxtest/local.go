package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// defaultLocalWaitDelay bounds how long Wait waits for output pipes that stay
// open after the process group was killed.
const defaultLocalWaitDelay = time.Second

// defaultLocalPath is the PATH used when the host has none.
const defaultLocalPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LocalExecutor is an Executor that runs each command as a real process on
// the host, with os/exec. It makes tests realistic (a real shell, real
// exit codes, real signals and real streaming) but it is not a sandbox.
//
// What it does NOT isolate: the process runs on the host as the current user
// (sudo is not emulated: a command with Sudo set runs as the current user
// too, unless LocalRefuseSudo is given), sees the host's whole filesystem
// (absolute paths, in the command name or its arguments, are host paths and
// are not translated into the sandbox directory) and uses the host's network.
// Only two things are per sandbox:
//
//   - the working directory, Cmd.HostCwd (created when missing), so relative
//     paths reach the sandbox's files;
//   - the environment, which is built from scratch and never inherits the
//     host's: PATH (the host's PATH, or LocalPath), HOME (Cmd.Dir),
//     LANG=C.UTF-8, the variables named by LocalPassEnv, and Cmd.Env on top.
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
// Each command runs in its own process group. Signal signals the whole
// group; the end of the session kills the whole group with SIGKILL; and when
// the command's main process exits, what is left of its group (background
// jobs, for instance) is killed too, so no process outlives Wait. Wait returns
// once both output pipes are drained, or LocalWaitDelay after the group was
// killed if a process outside the group still holds them.
//
// LocalExecutor needs a Unix system; elsewhere Start returns an error.
type LocalExecutor struct {
	path       string
	passEnv    map[string]string
	refuseSudo bool
	waitDelay  time.Duration
}

// LocalOption configures a LocalExecutor.
type LocalOption func(*LocalExecutor)

// LocalPath sets the PATH given to commands instead of the host's PATH.
// Cmd.Env may still override it.
func LocalPath(path string) LocalOption {
	return func(e *LocalExecutor) { e.path = path }
}

// LocalPassEnv copies the named variables from the host environment, as they
// are when NewLocalExecutor is called, into the commands' environment (for
// example GOCACHE or a proxy setting). Unset variables are skipped.
func LocalPassEnv(names ...string) LocalOption {
	return func(e *LocalExecutor) {
		for _, n := range names {
			if v, ok := os.LookupEnv(n); ok {
				e.passEnv[n] = v
			}
		}
	}
}

// LocalRefuseSudo makes commands with Sudo set fail with exit code 1 and a
// message on standard error, instead of running them as the current user.
func LocalRefuseSudo() LocalOption {
	return func(e *LocalExecutor) { e.refuseSudo = true }
}

// LocalWaitDelay sets how long Wait waits for the output pipes to close after
// the command's process group is gone (default 1s). Output written later by a
// process that escaped the group is dropped.
func LocalWaitDelay(d time.Duration) LocalOption {
	return func(e *LocalExecutor) { e.waitDelay = d }
}

// NewLocalExecutor returns a LocalExecutor configured by opts.
func NewLocalExecutor(opts ...LocalOption) *LocalExecutor {
	e := &LocalExecutor{
		path:      os.Getenv("PATH"),
		passEnv:   map[string]string{},
		waitDelay: defaultLocalWaitDelay,
	}
	if e.path == "" {
		e.path = defaultLocalPath
	}
	for _, o := range opts {
		o(e)
	}
	if e.waitDelay <= 0 {
		e.waitDelay = defaultLocalWaitDelay
	}
	return e
}

// Start implements Executor. It returns an error only when the command could
// not be started for a reason a shell would not report as an exit code: ctx
// already done, no working directory, an unsupported system, or a failure
// of the host (pipes, process limits).
func (e *LocalExecutor) Start(ctx context.Context, cmd *Cmd) (Process, error) {
	if !localSupported {
		return nil, errLocalUnsupported
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandboxtest: session ended before the command started: %w", err)
	}
	dir := cmd.HostCwd
	if dir == "" {
		dir = cmd.Dir
	}
	if dir == "" {
		return nil, errors.New("sandboxtest: LocalExecutor needs Cmd.HostCwd or Cmd.Dir")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandboxtest: working directory: %w", err)
	}
	stdout, stderr := localWriters(cmd)
	if cmd.Sudo && e.refuseSudo {
		return &localExitedProcess{code: 1, stderr: stderr,
			msg: "sudo: not supported by sandboxtest.LocalExecutor (it cannot become root)\n"}, nil
	}
	env := e.environ(cmd, dir)
	path, code, msg := localLookPath(cmd.Name, env["PATH"], dir)
	if code != 0 {
		return &localExitedProcess{code: code, stderr: stderr, msg: msg}, nil
	}
	return startLocal(ctx, localStart{
		path:      path,
		name:      cmd.Name,
		args:      cmd.Args,
		dir:       dir,
		env:       localEnvList(env),
		stdout:    stdout,
		stderr:    stderr,
		waitDelay: e.waitDelay,
	})
}

// localStart is what the platform code needs to start a process.
type localStart struct {
	path, name     string
	args           []string
	dir            string
	env            []string
	stdout, stderr io.Writer
	waitDelay      time.Duration
}

// environ builds the command's environment; see LocalExecutor.
func (e *LocalExecutor) environ(cmd *Cmd, dir string) map[string]string {
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

func localEnvList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

// localWriters returns the command's writers, serialised by one lock so that
// stdout and stderr may share a writer.
func localWriters(cmd *Cmd) (stdout, stderr io.Writer) {
	mu := &sync.Mutex{}
	return &localLockedWriter{mu: mu, w: writerOrDiscard(cmd.Stdout)}, &localLockedWriter{mu: mu, w: writerOrDiscard(cmd.Stderr)}
}

type localLockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *localLockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// localLookPath resolves name as a shell would, with the given PATH and
// working directory. On failure it returns the shell's exit code (127 not
// found, 126 not executable) and message.
func localLookPath(name, pathEnv, dir string) (path string, code int, msg string) {
	if name == "" {
		return "", 127, ": command not found\n"
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", 127, name + ": No such file or directory\n"
		case err != nil:
			return "", 126, fmt.Sprintf("%s: %v\n", name, localErrText(err))
		case fi.IsDir():
			return "", 126, name + ": Is a directory\n"
		case fi.Mode()&0o111 == 0:
			return "", 126, name + ": Permission denied\n"
		}
		return p, 0, ""
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, 0, ""
		}
	}
	return "", 127, name + ": command not found\n"
}

// localErrText is the system's description of err, without the Go operation
// and path that *fs.PathError adds.
func localErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// localExitedProcess is a command that failed before it could start, as a shell
// reports it: a message on standard error and an exit code. The message is
// written when Wait is called, so that Start never writes.
type localExitedProcess struct {
	code   int
	msg    string
	stderr io.Writer
}

func (p *localExitedProcess) Signal(sig int) error {
	if sig < 0 {
		return fmt.Errorf("sandboxtest: invalid signal %d", sig)
	}
	return nil
}

func (p *localExitedProcess) Wait() (int, error) {
	if p.msg != "" {
		_, _ = io.WriteString(p.stderr, p.msg)
	}
	return p.code, nil
}
