package local

import (
	"context"
	"errors"
	"io"
)

// Executor runs the commands that clients start in the server's sandboxes.
// Three implementations ship with the module: hostexec runs host processes,
// isolated runs them in namespaces of their own, and sandboxtest.Script
// plays scripted handlers for tests that need exact control of output and
// timing. Users may write their own.
type Executor interface {
	// Start starts cmd and returns at once. Output goes to cmd.Stdout and
	// cmd.Stderr as it is produced. ctx is cancelled when the sandbox session
	// ends; the process must then die.
	Start(ctx context.Context, cmd *Cmd) (Process, error)
}

// Cmd is one command a client asked the server to run.
type Cmd struct {
	SandboxName string
	SessionID   string
	CommandID   string
	Name        string            // the executable as requested
	Args        []string          // argv after Name
	Env         map[string]string // sandbox env merged with the command's env
	Cwd         string            // effective working directory, a sandbox path
	Sudo        bool
	// Dir is the host directory that backs the sandbox's filesystem. See
	// Server.HostPath for how sandbox paths map into it.
	Dir string
	// HostCwd is Cwd translated to a host path.
	HostCwd string
	// EtcDir is the host directory of the sandbox's own, writable account
	// files (passwd, group, shadow, gshadow), which useradd, groupadd and
	// usermod change. An executor that gives commands a root of their own
	// shows them at /etc over the image's /etc; see DefaultUser.
	EtcDir string
	// NetworkPolicy is the mode of the network policy a client set on the
	// sandbox or its session ("allow-all", "deny-all" or "custom"), or ""
	// when none was set. The server does not filter traffic itself; an
	// executor may honour it (the isolated executor does).
	NetworkPolicy string
	Stdout        io.Writer // each Write becomes one stdout frame
	Stderr        io.Writer // each Write becomes one stderr frame
}

// Process is a started command.
type Process interface {
	// Signal delivers a POSIX signal number (15 SIGTERM, 9 SIGKILL, ...).
	// Signalling a finished process is not an error.
	Signal(sig int) error
	// Wait blocks until the process ends and returns its exit code. A process
	// killed by a signal reports 128+signal, as a shell would. Wait is called
	// exactly once, and only after Wait returns does the server consider the
	// command's output complete.
	Wait() (exitCode int, err error)
}

// NotFoundError is what an Executor's Start returns for a command whose
// executable does not exist. Hosted Vercel refuses such a command with
// 400 executable_not_found (no command, no exit code); a server made
// WithFriendly runs it as a shell would: Msg on stderr, exit code 127.
type NotFoundError struct {
	Name string
	Msg  string // the shell's message, ending with a newline
}

// Error implements error.
func (e *NotFoundError) Error() string { return "executable not found: " + e.Name }

// LeaderSignaler is a Process that can signal the command's own process
// alone, without the processes it started. Hosted Vercel's kill does that
// (a sh -c pipeline can outlive a SIGTERM), so a server in its default
// mode signals a kill request this way when the Process allows it;
// session ends and timeouts still use Signal.
type LeaderSignaler interface {
	SignalLeader(sig int) error
}

// noExecutor is the executor of a server given none: no command starts.
type noExecutor struct{}

var errNoExecutor = errors.New("no executor: the server was started without WithExecutor")

func (noExecutor) Start(context.Context, *Cmd) (Process, error) { return nil, errNoExecutor }
