// Package command runs commands in a Vercel Sandbox, the way os/exec runs
// local ones. (*sandbox.Sandbox).Command returns a *Cmd bound to its
// sandbox, as exec.Command does; set its fields, then call Run, Output or
// CombinedOutput to run it attached (its output streams into Stdout and
// Stderr as it arrives and the call returns a Result), or Start to run it
// detached: the Handle can be waited on, signalled, stored as a Ref,
// reattached from another process (sandbox.Client.Attach), and its logs
// replayed.
//
//	cmd := sb.Command("make", "release")
//	cmd.Dir = "/vercel/sandbox"
//	cmd.Stdout = os.Stdout
//	res, err := cmd.Run(ctx)
//
// A Cmd runs once. Cancelling the context of Run, Output, CombinedOutput
// or Handle.Wait kills the remote command, as exec.CommandContext does,
// unless Cmd.DetachOnCancel is set.
//
// The errors of the API (sandbox.ErrStreamEnded, *sandbox.InputError and
// the like) live in package sandbox; those proper to a command's outcome
// (ExitError, InactivityError) live here.
package command

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// DefaultCaptureLimit is how many bytes of each stream a Result keeps when
// Cmd.CaptureLimit is zero.
const DefaultCaptureLimit = 1 << 20

// Cmd is a command to run in a sandbox. Make it with
// (*sandbox.Sandbox).Command or (*sandbox.User).Command, which bind it to
// the sandbox; a Cmd made otherwise refuses to run. Set its fields before
// it runs; it runs once.
//
// Name is the executable, not a shell line: use Command("sh", "-c", line)
// for shell syntax.
type Cmd struct {
	Name string
	Args []string
	// Env is layered over the sandbox's environment.
	Env map[string]string
	// Dir is the working directory; empty means the session's cwd.
	Dir string
	// Sudo runs the command as root.
	Sudo bool
	// Timeout is enforced inside the sandbox, which kills the command
	// (SIGKILL) when it runs longer; its Result then reports TimedOut.
	// Zero means none; otherwise at least 100 ms.
	Timeout time.Duration
	// InactivityTimeout ends a run (or the Wait of a started command)
	// whose command prints nothing for this long: the command is killed
	// and the call returns an *InactivityError. Zero means none. The clock
	// measures the command, not the caller: it stops while Stdout or
	// Stderr holds a write, so a slow writer never makes a command look
	// silent.
	InactivityTimeout time.Duration
	// Stdout and Stderr receive the output of a run (or, for a started
	// command, during Handle.Wait) as it arrives, one write per frame; a
	// frame longer than the client's buffer (about 128 KiB) comes in
	// several writes as it arrives, so an output line of any length costs
	// bounded memory (what a server sends
	// before naming the stream, as hosted Vercel does, waits in a temporary
	// file beyond 1 MiB). Nil discards (output is still captured).
	Stdout io.Writer
	Stderr io.Writer
	// CaptureLimit bounds how many bytes of each stream the Result keeps,
	// not what Stdout and Stderr receive; later output is counted but
	// dropped, and the Truncated flags are set.
	// Zero means DefaultCaptureLimit; negative means capture nothing.
	CaptureLimit int
	// DetachOnCancel leaves the remote command running when the context
	// of Run, Output, CombinedOutput or Handle.Wait ends before it does:
	// the call only stops waiting, and the command can be reattached by
	// its ids. Without it the command is killed (SIGKILL), as
	// exec.CommandContext kills its process, so no work continues after
	// the caller gives up.
	DetachOnCancel bool

	conn *conn.Conn // the sandbox the command runs in; set by Command
	as   rewrite    // runs the command as a user, when set
	used atomic.Bool
	// propagate gives the command the variables that continue its trace
	// (see observe.PropagateCmd), whatever the client's default.
	propagate bool
}

// rewrite turns a Cmd into the command line, environment and directory to
// send, such as a sudo line that runs it as another user.
type rewrite func(c *Cmd) (name string, args []string, env map[string]string, dir string)

func init() {
	conn.BindCmd = bind
	conn.AttachCmd = attach
	observe.PropagateCmd = func(c *Cmd) { c.propagate = true }
	conn.CommandInfo = infoFromWire
}

// bind binds cmd to the sandbox c reaches, running it through as when
// as is not nil. Package sandbox reaches it through conn.BindCmd.
func bind(cmd *Cmd, c *conn.Conn, as func(*Cmd) (string, []string, map[string]string, string)) *Cmd {
	cmd.conn, cmd.as = c, as
	return cmd
}

// begin refuses a Cmd that cannot run: one not made by Command, one that
// has run, or one whose fields the API would refuse.
func (c *Cmd) begin() error {
	if c == nil {
		return apierr.Invalid("Cmd", "nil command")
	}
	if c.conn == nil || c.conn.Core == nil || c.conn.WithSession == nil {
		return apierr.Invalid("Cmd", "not bound to a sandbox: make it with (*sandbox.Sandbox).Command")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if !c.used.CompareAndSwap(false, true) {
		return apierr.Invalid("Cmd", "already started: a Cmd runs once")
	}
	return nil
}

// Validate reports the first problem that would make the API refuse c, or
// run another command than c. Every text of c travels as JSON: a NUL byte
// or invalid UTF-8 (which JSON would carry as U+FFFD) in the name, an
// argument, Env or Dir is refused.
func (c *Cmd) Validate() error {
	if c == nil {
		return apierr.Invalid("Cmd", "nil command")
	}
	if strings.TrimSpace(c.Name) == "" {
		return apierr.Invalid("Cmd.Name", "empty command name")
	}
	if r := wire.TextFault(c.Name); r != "" {
		return apierr.Invalid("Cmd.Name", "%s", r)
	}
	for i, a := range c.Args {
		if r := wire.TextFault(a); r != "" {
			return apierr.Invalid(fmt.Sprintf("Cmd.Args[%d]", i), "%s", r)
		}
	}
	for k, v := range c.Env {
		if k == "" || strings.IndexByte(k, '=') >= 0 || wire.TextFault(k) != "" {
			return apierr.Invalid("Cmd.Env", "invalid variable name %q", k)
		}
		if r := wire.TextFault(v); r != "" {
			return apierr.Invalid("Cmd.Env["+k+"]", "%s", r)
		}
	}
	if n := wire.EnvPayloadSize(c.Env); n > wire.MaxEnvPayload {
		return apierr.Invalid("Cmd.Env", "%d bytes as JSON, above the %d that hosted Vercel accepts", n, wire.MaxEnvPayload)
	}
	if r := wire.TextFault(c.Dir); r != "" {
		return apierr.Invalid("Cmd.Dir", "%s", r)
	}
	switch {
	case c.Timeout < 0:
		return apierr.Invalid("Cmd.Timeout", "negative duration %s", c.Timeout)
	case c.Timeout > 0 && c.Timeout < 100*time.Millisecond:
		return apierr.Invalid("Cmd.Timeout", "%s is below the minimum of 100ms", c.Timeout)
	case c.InactivityTimeout < 0:
		return apierr.Invalid("Cmd.InactivityTimeout", "negative duration %s", c.InactivityTimeout)
	}
	return nil
}

// String renders the command line, quoting arguments that need it.
func (c *Cmd) String() string {
	parts := make([]string, 0, 1+len(c.Args))
	for _, s := range append([]string{c.Name}, c.Args...) {
		if s == "" || strings.ContainsAny(s, " \t\n\"'\\$`") {
			s = fmt.Sprintf("%q", s)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Result is the outcome of a command.
type Result struct {
	CommandID string
	SessionID string
	StartedAt time.Time
	// Duration is the execution time the sandbox reported, or the
	// client-side time from start to finish when it reported none.
	Duration time.Duration
	// TimedOut reports a command killed by its own Cmd.Timeout: it exited
	// by SIGKILL (code 137) after running at least Timeout.
	TimedOut bool
	// Stdout and Stderr hold the captured output, up to the capture limit.
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count all output, captured or not.
	StdoutBytes, StderrBytes int64
	// StdoutTruncated and StderrTruncated report output beyond the limit.
	StdoutTruncated, StderrTruncated bool

	exitCode int
	exited   bool // exitCode is known
}

// ExitCode returns the command's exit code, or -1 when it is not known: a
// run that ended before its command did returns its partial Result with
// the error.
func (r *Result) ExitCode() int {
	if r == nil || !r.exited {
		return -1
	}
	return r.exitCode
}

// Success reports whether the command exited with code 0.
func (r *Result) Success() bool { return r.ExitCode() == 0 }

// setExit records the exit code and whether it is the kill of timeout, set
// on the command. The API does not say why a command was killed, but the
// sandbox starts the timeout's clock once the command has started and
// counts whole milliseconds (as the timeout travels): a command that exited
// by SIGKILL having run at least its timeout was killed by it, since the
// timeout's kill came no later than its exit.
func (r *Result) setExit(code int, timeout time.Duration) {
	r.exitCode, r.exited = code, true
	r.TimedOut = timeout > 0 && code == killedCode &&
		r.Duration >= time.Duration(wire.Millis(timeout))*time.Millisecond
}

// killedCode is the exit code of a command killed by SIGKILL (128+9).
const killedCode = 128 + int(SIGKILL)

// ErrInactivity matches *InactivityError.
var ErrInactivity = errors.New("command produced no output for too long")

// ExitError reports a command that finished with a non-zero exit code. The
// command ran; the Result holds its output.
type ExitError struct {
	*Result
}

// Error implements error, ending with the last line of stderr when any.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("command %s exited with code %d", e.CommandID, e.ExitCode())
	if e.TimedOut {
		msg = fmt.Sprintf("command %s was killed by its timeout (exit code %d)", e.CommandID, e.ExitCode())
	}
	if tail := lastLine(e.Stderr); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func lastLine(b []byte) string {
	b = bytes.TrimRight(b, "\r\n \t")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	if len(b) > 200 {
		b = append(b[:200:200], "…"...)
	}
	return string(b)
}

// InactivityError reports an attached run ended because its command printed
// nothing for Silence. The command was killed (when Killed is true).
type InactivityError struct {
	CommandID string
	SessionID string
	Silence   time.Duration
	Killed    bool
	KillErr   error // why the kill failed, if it did
	Result    *Result
}

// Error implements error.
func (e *InactivityError) Error() string {
	s := fmt.Sprintf("command %s produced no output for %s", e.CommandID, e.Silence)
	if e.Killed {
		s += "; it was killed"
	} else if e.KillErr != nil {
		s += "; killing it failed: " + e.KillErr.Error()
	}
	return s
}

// Is matches ErrInactivity.
func (e *InactivityError) Is(target error) bool { return target == ErrInactivity }

// Unwrap returns the kill error, if any.
func (e *InactivityError) Unwrap() error { return e.KillErr }

// Signal is a POSIX signal number, as the kill endpoint takes it.
type Signal int

// Signals the sandbox understands by name.
const (
	SIGHUP  Signal = 1
	SIGINT  Signal = 2
	SIGQUIT Signal = 3
	SIGKILL Signal = 9
	SIGTERM Signal = 15
	SIGCONT Signal = 18
	SIGSTOP Signal = 19
)

var signalNames = map[Signal]string{SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT",
	SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGCONT: "SIGCONT", SIGSTOP: "SIGSTOP"}

// String returns the signal's name, or its number.
func (s Signal) String() string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

// ParseSignal accepts a name ("SIGTERM", "term") or a number ("15").
func ParseSignal(s string) (Signal, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(u, "SIG") {
		u = "SIG" + u
	}
	for sig, name := range signalNames {
		if name == u {
			return sig, nil
		}
	}
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &n); err == nil && n > 0 && n < 65 {
		return Signal(n), nil
	}
	return 0, apierr.Invalid("signal", "unknown signal %q", s)
}

// Stream names an output stream.
type Stream int

// Output streams.
const (
	Stdout Stream = 1
	Stderr Stream = 2
)

// String returns "stdout" or "stderr".
func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// Event is one chunk of output from a log stream: a frame, or a piece of
// a frame longer than the client's buffer (about 128 KiB), which comes as
// several Events of the same Stream as it arrives.
type Event struct {
	Stream Stream
	// Data is valid until the next iteration: it is a slice of the
	// client's buffer. Copy it (bytes.Clone) to keep it.
	Data []byte
}

// Info is the state of a command as the API reports it.
type Info struct {
	ID        string
	Name      string
	Args      []string
	Cwd       string
	SessionID string
	// ExitCode is nil while the command runs.
	ExitCode  *int
	StartedAt time.Time
	Duration  time.Duration // zero when not reported
}

// Done reports whether the command has finished.
func (i Info) Done() bool { return i.ExitCode != nil }
