// Package command runs commands in a Vercel Sandbox, the way os/exec runs
// local ones: attached runs that stream output into writers and return a
// Result, and detached runs whose Handle can be waited on, killed, stored as
// a Ref, reattached from another process, and whose logs can be replayed.
//
// A Cmd is plain data and may be reused. Run it with a *sandbox.Sandbox
// (Run, Output, CombinedOutput, Start); reattach with sandbox.Client.Attach.
package command

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// DefaultCaptureLimit is how many bytes of each stream a Result keeps when
// Cmd.CaptureLimit is zero.
const DefaultCaptureLimit = 1 << 20

// Cmd is a command to run. Name is the executable, not a shell line: use
// Name "sh" with Args {"-c", line} for shell syntax.
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
	// (SIGKILL) when it runs longer. Zero means none; otherwise at least
	// 100 ms.
	Timeout time.Duration
	// InactivityTimeout ends an attached run whose command prints nothing
	// for this long: the command is killed and the run returns an
	// *InactivityError. Zero means none. The clock measures the command,
	// not the caller: it stops while Stdout or Stderr holds a write, so a
	// slow writer never makes a command look silent.
	InactivityTimeout time.Duration
	// Stdout and Stderr receive the output of an attached run as it
	// arrives, one write per frame; a frame longer than the client's
	// buffer (about 128 KiB) comes in several writes as it arrives, so an
	// output line of any length costs bounded memory (what a server sends
	// before naming the stream, as hosted Vercel does, waits in a temporary
	// file beyond 1 MiB). Nil discards (output is still captured).
	Stdout io.Writer
	Stderr io.Writer
	// CaptureLimit bounds how many bytes of each stream the Result keeps,
	// not what Stdout and Stderr receive; later output is counted but
	// dropped, and the Truncated flags are set.
	// Zero means DefaultCaptureLimit; negative means capture nothing.
	CaptureLimit int
	// KillOnCancel kills the remote command when the caller's context ends
	// before the command does, so no work continues after the caller gives
	// up. Without it, cancelling only stops waiting.
	KillOnCancel bool
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

// Result is the outcome of a finished command.
type Result struct {
	CommandID string
	SessionID string
	// ExitCode is -1 when it is not known: a run that ended before its
	// command did returns its partial Result with the error.
	ExitCode  int
	StartedAt time.Time
	// Duration is the execution time the sandbox reported, or the
	// client-side time from start to finish when it reported none.
	Duration time.Duration
	// Stdout and Stderr hold the captured output, up to the capture limit.
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes count all output, captured or not.
	StdoutBytes, StderrBytes int64
	// StdoutTruncated and StderrTruncated report output beyond the limit.
	StdoutTruncated, StderrTruncated bool
}

// Success reports whether the command exited with code 0.
func (r *Result) Success() bool { return r != nil && r.ExitCode == 0 }

// ErrInactivity matches *InactivityError.
var ErrInactivity = errors.New("command produced no output for too long")

// ExitError reports a command that finished with a non-zero exit code. The
// command ran; the Result holds its output.
type ExitError struct {
	*Result
}

// Error implements error, ending with the last line of stderr when any.
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("command %s exited with code %d", e.CommandID, e.ExitCode)
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
