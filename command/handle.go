package command

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/capture"
	"github.com/sbx-go/vercel-sandbox/internal/cmdstream"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Ref identifies a command: enough to reattach to it from another process.
// Its text form, "session/command" or "sandbox/session/command", can be
// stored in a database and parsed back with ParseRef.
type Ref struct {
	SandboxName string // optional
	SessionID   string
	CommandID   string
}

// String returns the text form.
func (r Ref) String() string {
	if r.SandboxName != "" {
		return r.SandboxName + "/" + r.SessionID + "/" + r.CommandID
	}
	return r.SessionID + "/" + r.CommandID
}

// MarshalText implements encoding.TextMarshaler.
func (r Ref) MarshalText() ([]byte, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	return []byte(r.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Ref) UnmarshalText(b []byte) error {
	p, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

func (r Ref) validate() error {
	for _, f := range []struct{ name, v string }{{"SessionID", r.SessionID}, {"CommandID", r.CommandID}} {
		if f.v == "" {
			return apierr.Invalid("Ref."+f.name, "empty")
		}
		if strings.ContainsAny(f.v, "/?#% \x00") {
			return apierr.Invalid("Ref."+f.name, "invalid id %q", f.v)
		}
	}
	if strings.ContainsAny(r.SandboxName, "/?#% \x00") {
		return apierr.Invalid("Ref.SandboxName", "invalid name %q", r.SandboxName)
	}
	return nil
}

// ParseRef parses the text form of a Ref.
func ParseRef(s string) (Ref, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	var r Ref
	switch len(parts) {
	case 2:
		r = Ref{SessionID: parts[0], CommandID: parts[1]}
	case 3:
		r = Ref{SandboxName: parts[0], SessionID: parts[1], CommandID: parts[2]}
	default:
		return Ref{}, apierr.Invalid("Ref", "%q is not session/command or sandbox/session/command", s)
	}
	if err := r.validate(); err != nil {
		return Ref{}, err
	}
	return r, nil
}

// Handle is a command started detached (Cmd.Start), or reattached by its
// Ref (sandbox.Client.Attach). It is safe for concurrent use; every method
// does its own request.
type Handle struct {
	c     *conn.Conn
	ref   Ref
	info  Info
	cmd   *Cmd      // the command started, nil for a reattached one
	began time.Time // when it was started here

	waited atomic.Bool // Wait of a started command was called

	mu    sync.Mutex
	final *Info // the command's state once it is known to have finished
}

// Ref returns the reference to store for reattaching.
func (h *Handle) Ref() Ref { return h.ref }

// ID returns the command id.
func (h *Handle) ID() string { return h.ref.CommandID }

// SessionID returns the id of the session the command runs in.
func (h *Handle) SessionID() string { return h.ref.SessionID }

// Started returns the state reported when the handle was made, without a
// request (the command's name, args and cwd when it was started here).
func (h *Handle) Started() Info { return h.info }

// Info fetches the command's current state.
func (h *Handle) Info(ctx context.Context) (Info, error) {
	info, err := fetchInfo(ctx, h.c.Core, h.ref, false)
	if err == nil {
		h.remember(info)
	}
	return info, err
}

// remember keeps info when it says the command finished.
func (h *Handle) remember(info Info) {
	if info.Done() {
		h.mu.Lock()
		h.final = &info
		h.mu.Unlock()
	}
}

// finished returns the command's final state when it is known.
func (h *Handle) finished() *Info {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.final
}

// Wait blocks until the command finishes and returns its result. A
// non-zero exit code gives the result and an *ExitError. An answer about
// another command is refused with a *sandbox.StreamError whose Code is
// "command_mismatch".
//
// For a command started by Cmd.Start, Wait behaves as Cmd.Run: it passes
// the output to the Cmd's Stdout and Stderr as it comes (replayed from
// the start), captures it into the result up to CaptureLimit, ends a
// silent command after InactivityTimeout with an *InactivityError, and
// kills the command when ctx ends unless DetachOnCancel is set; a run that
// ends early gives its partial result with the error. (When nothing needs
// the output, as with CaptureLimit negative, no writers and no
// InactivityTimeout, it only waits.) It may be called once. A reattached command (sandbox.Client.Attach) has no Cmd: its Wait
// carries no output (use Output or Logs), may be repeated, and ending ctx
// only stops waiting.
//
// A wait that is cut (hosted Vercel's edge ends requests after about six
// minutes, and a transport's response-header timeout may fire first,
// since hosted Vercel sends the headers only when the command ends) is
// repeated until the command finishes, its session ends (an error
// matching sandbox.ErrGone) or ctx ends; see sandbox.ReattachPolicy.
func (h *Handle) Wait(ctx context.Context) (*Result, error) {
	ctx, op := observe.Start(ctx, h.c.Core.Observer(), observe.OpWait, slog.String(observe.KeySandbox, h.ref.SandboxName),
		slog.String(observe.KeySession, h.ref.SessionID), slog.String(observe.KeyCommand, h.ref.CommandID))
	res, err := h.wait(ctx)
	endCommand(op, res, err)
	return res, err
}

func (h *Handle) wait(ctx context.Context) (*Result, error) {
	if h.cmd != nil {
		if !h.waited.CompareAndSwap(false, true) {
			return nil, apierr.Invalid("Handle", "Wait already called")
		}
		return waitStarted(ctx, h)
	}
	info, err := wait(ctx, h.c, h.ref)
	if err != nil {
		return nil, err
	}
	h.remember(info)
	return h.result(info, nil, nil)
}

// result is the result of the command, finished as info says, with the
// output captured of it.
func (h *Handle) result(info Info, stdout, stderr *capture.Buffer) (*Result, error) {
	res := &Result{CommandID: h.ref.CommandID, SessionID: h.ref.SessionID,
		StartedAt: info.StartedAt, Duration: info.Duration}
	if stdout != nil {
		res.Stdout, res.StdoutBytes, res.StdoutTruncated = stdout.Bytes(), stdout.Total(), stdout.Truncated()
		res.Stderr, res.StderrBytes, res.StderrTruncated = stderr.Bytes(), stderr.Total(), stderr.Truncated()
	}
	var timeout time.Duration
	if h.cmd != nil {
		timeout = h.cmd.Timeout
	}
	res.setExit(*info.ExitCode, timeout)
	if res.ExitCode() != 0 {
		return res, &ExitError{Result: res}
	}
	return res, nil
}

// Kill sends SIGKILL to the command: it ends at once, with exit code 137.
func (h *Handle) Kill(ctx context.Context) error {
	return h.Signal(ctx, SIGKILL)
}

// Signal sends sig to the command, such as SIGTERM to ask it to end (see
// Terminate) or SIGSTOP and SIGCONT to pause and resume it.
func (h *Handle) Signal(ctx context.Context, sig Signal) error {
	if sig <= 0 {
		return apierr.Invalid("signal", "invalid signal %d", sig)
	}
	_, err := sendKill(ctx, h.c.Core, h.ref, sig)
	return err
}

// Terminate stops the command the way a careful supervisor does: SIGTERM,
// then, if the command still runs after grace, SIGKILL. It returns once
// the command has ended or SIGKILL was sent. On hosted Vercel a kill
// signals the command's process only, not the processes it started, so a
// shell pipeline may need the SIGKILL. A session that has ended
// (sandbox.ErrGone) has ended its commands too, and is not an error.
func (h *Handle) Terminate(ctx context.Context, grace time.Duration) error {
	if grace < 0 {
		return apierr.Invalid("grace", "negative duration %s", grace)
	}
	err := h.Signal(ctx, SIGTERM)
	if err == nil {
		gctx, cancel := context.WithTimeout(ctx, grace)
		var info Info
		info, err = fetchInfo(gctx, h.c.Core, h.ref, true)
		cancel()
		if err == nil && info.Done() {
			h.remember(info)
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		err = h.Kill(ctx)
	}
	if errors.Is(err, apierr.ErrGone) {
		return nil
	}
	return err
}

// Logs replays the command's output from the start and follows it until
// the command ends. A log stream cut while the command runs is opened
// again and the output already yielded skipped, so each byte is yielded
// once (see sandbox.ReattachPolicy); since a cut can end a log stream as cleanly as
// the command's end does, the logs are read once more after the command
// ends, to confirm that nothing follows what was yielded. The
// sequence stops early, with an error, when ctx ends, the session ends (an
// error matching sandbox.ErrGone), a replay does not match what was yielded
// (a *sandbox.OutputLostError naming the stream and offset) or the stream fails in a
// way no re-attachment mends.
//
// An Event's Data is valid until the next iteration, and a long frame
// comes as several Events: memory stays bounded whatever the output.
func (h *Handle) Logs(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f := &follower{c: h.c, ref: h.ref, op: "logs", known: h.finished(), sent: newDelivered(),
			emit: func(k cmdstream.Kind, data []byte) error {
				s := Stdout
				if k == cmdstream.KindStderr {
					s = Stderr
				}
				if !yield(Event{Stream: s, Data: data}, nil) {
					return errStop
				}
				return nil
			}}
		info, err := f.run(ctx, 0, nil)
		if errors.Is(err, errStop) {
			return
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		h.remember(info)
	}
}

// CopyOutput streams the command's output into stdout and stderr (either
// may be nil) until the command ends, a long frame in several writes as it
// arrives, in bounded memory.
func (h *Handle) CopyOutput(ctx context.Context, stdout, stderr io.Writer) error {
	for ev, err := range h.Logs(ctx) {
		if err != nil {
			return err
		}
		w := stdout
		if ev.Stream == Stderr {
			w = stderr
		}
		if w != nil {
			if _, err := w.Write(ev.Data); err != nil {
				return err
			}
		}
	}
	return nil
}

// ErrOutputTruncated is returned with the kept output when Handle.Output
// had to drop bytes beyond DefaultCaptureLimit.
var ErrOutputTruncated = errors.New("command output exceeded the capture limit and was truncated")

// Output waits for the command's output to end and returns its stdout, as
// Cmd.Output does: a non-zero exit code gives the output and an
// *ExitError, whose Result holds stderr. It keeps up to DefaultCaptureLimit
// bytes per stream; beyond that it returns what it kept and
// ErrOutputTruncated. Use CopyOutput for unbounded output. Ending ctx only
// stops reading.
func (h *Handle) Output(ctx context.Context) ([]byte, error) {
	o, e := capture.New(DefaultCaptureLimit), capture.New(DefaultCaptureLimit)
	f := &follower{c: h.c, ref: h.ref, op: "logs", known: h.finished(), sent: newDelivered(),
		emit: func(k cmdstream.Kind, data []byte) error {
			if k == cmdstream.KindStderr {
				_, _ = e.Write(data)
			} else {
				_, _ = o.Write(data)
			}
			return nil
		}}
	info, err := f.run(ctx, 0, nil)
	if err != nil {
		return o.Bytes(), err
	}
	h.remember(info)
	res, err := h.result(info, o, e)
	if err == nil && (o.Truncated() || e.Truncated()) {
		err = ErrOutputTruncated
	}
	return res.Stdout, err
}

func cmdPath(ref Ref) string {
	return conn.SessionPath(ref.SessionID) + "/cmd/" + url.PathEscape(ref.CommandID)
}

// check refuses a ref whose ids cannot be put in a path.
func (r Ref) check() error {
	if err := conn.ValidateID("Ref.SessionID", r.SessionID); err != nil {
		return err
	}
	return conn.ValidateID("Ref.CommandID", r.CommandID)
}

// fetchInfo returns the state of a command; with wait it blocks until the
// command has finished. An answer about another command is refused.
func fetchInfo(ctx context.Context, core *httpcore.Client, ref Ref, wait bool) (Info, error) {
	if err := ref.check(); err != nil {
		return Info{}, err
	}
	var q url.Values
	if wait {
		q = url.Values{"wait": {"true"}}
	}
	var out wire.CommandResponse
	err := core.JSON(ctx, &httpcore.Call{Method: "GET", Path: cmdPath(ref), Query: q, Op: "get command",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID, Stream: wait}, &out)
	if err != nil {
		return Info{}, err
	}
	if out.Command.ID != ref.CommandID {
		return Info{}, otherCommand(ref.SessionID, ref.CommandID, "the answer")
	}
	return infoFromWire(&out.Command), nil
}

// otherCommand is the error of an answer, or a stream's final line, that
// is about another command than the one asked for (or about none): its
// exit code is not this command's. The other id is not repeated, since a
// hostile server could put a secret there.
func otherCommand(sessionID, commandID, what string) error {
	return &apierr.StreamError{Code: "command_mismatch", Message: what + " names another command",
		SessionID: sessionID, CommandID: commandID}
}

// sendKill sends sig to a command.
func sendKill(ctx context.Context, core *httpcore.Client, ref Ref, sig Signal) (Info, error) {
	if err := ref.check(); err != nil {
		return Info{}, err
	}
	var out wire.CommandResponse
	// Delivering the same signal twice is harmless for the signals used to
	// stop a command, so the call is retried like a read.
	err := core.JSON(ctx, &httpcore.Call{Method: "POST", Path: cmdPath(ref) + "/kill",
		JSON: wire.KillRequest{Signal: int(sig)}, Op: "kill command",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID}, &out)
	if err != nil {
		return Info{}, err
	}
	return infoFromWire(&out.Command), nil
}

// openLogs opens a command's log stream: log lines replayed from the start,
// ending when the command does. The decoder's errors hide the secrets the
// request carried.
func openLogs(ctx context.Context, core *httpcore.Client, ref Ref) (io.ReadCloser, *cmdstream.Decoder, error) {
	if err := ref.check(); err != nil {
		return nil, nil, err
	}
	resp, err := core.Do(ctx, &httpcore.Call{Method: "GET", Path: cmdPath(ref) + "/logs", Op: "command logs",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID, Stream: true})
	if err != nil {
		return nil, nil, err
	}
	secrets := cmdstream.Secrets(resp)
	if err := cmdstream.CheckContentType(resp.Header, secrets, "logs", ref.SessionID, ref.CommandID); err != nil {
		resp.Body.Close()
		return nil, nil, err
	}
	return resp.Body, cmdstream.NewDecoder(resp.Body, secrets, ref.SessionID, ref.CommandID), nil
}
