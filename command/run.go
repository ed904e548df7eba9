package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
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

// An attached run is one POST …/cmd whose answer streams the command: a
// line naming the started command, its output, then a line with its exit
// code. A stream cut before the final line (hosted Vercel cuts every
// stream after about six minutes) is followed through the command's logs
// (see follow.go), never by running the command again. Everything else
// that can end it early is decided here, after the stream stops: silence
// past InactivityTimeout (the timer closes the body, the command is
// killed), the caller's context (killed unless DetachOnCancel), and a cut
// that cannot be followed (an ErrStreamEnded, never an invented exit
// code). Once the command has started, the output captured so far and its
// ids travel with the error as a partial Result (exit code -1). A final
// line about another command is refused, not taken as this one's exit.
//
// The Wait of a started command is the same run over the logs endpoint
// from the start, so that it honours the same fields.

// Run runs the command attached: its output reaches Stdout and Stderr as
// it is produced, and Run returns when the command ends. The result holds
// the exit code and the captured output. A non-zero exit code gives the
// result and an *ExitError. The command is sent once; it is never re-sent
// after a failure that may have started it.
//
// A run that ends before its command does (ctx ends, InactivityTimeout
// fires, a cut stream cannot be followed, output cannot be delivered
// whole) returns, once the command has started, its partial result with
// the error, as os/exec keeps its buffers: the output captured so far,
// CommandID and SessionID to reattach with (see sandbox.Sandbox.Attach),
// and exit code -1, since it is not known. When ctx ends the command is
// killed, unless DetachOnCancel is set.
func (c *Cmd) Run(ctx context.Context) (*Result, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	return c.run(ctx, c.Stdout, c.Stderr)
}

// Output runs the command as Run does and returns its captured stdout. A
// non-zero exit code gives the output and an *ExitError, whose Result
// holds the captured stderr; a run that ends early (see Run) gives the
// stdout captured so far with its error.
func (c *Cmd) Output(ctx context.Context) ([]byte, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	res, err := c.run(ctx, c.Stdout, c.Stderr)
	if res == nil {
		return nil, err
	}
	return res.Stdout, err
}

// CombinedOutput runs the command as Run does and returns stdout and
// stderr interleaved as they arrived, up to the capture limit. A run that
// ends early (see Run) gives the output captured so far with its error.
func (c *Cmd) CombinedOutput(ctx context.Context) ([]byte, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	both := capture.New(captureLimit(c))
	_, err := c.run(ctx, teeWriter(c.Stdout, both), teeWriter(c.Stderr, both))
	return both.Bytes(), err
}

// Start starts the command detached and returns at once with a handle to
// wait on, signal or read the logs of. The command is sent once.
//
// ctx bounds the request that starts the command, not the command: once
// Start has returned, ending ctx changes nothing. Handle.Wait is what
// honours the fields Run honours (Stdout, Stderr, CaptureLimit,
// InactivityTimeout, DetachOnCancel), so that Start then Wait behaves as
// Run; Timeout is enforced by the sandbox either way.
func (c *Cmd) Start(ctx context.Context) (*Handle, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	ctx, op := observe.Start(ctx, c.conn.Core.Observer(), observe.OpStart, slog.String(observe.KeySandbox, c.conn.SandboxName))
	h, err := c.start(ctx)
	if op != nil {
		if h != nil {
			op.Set(slog.String(observe.KeySession, h.ref.SessionID), slog.String(observe.KeyCommand, h.ref.CommandID),
				slog.String(observe.KeyOutcome, observe.OutcomeStarted))
		}
		op.End(err)
	}
	return h, err
}

func (c *Cmd) start(ctx context.Context) (*Handle, error) {
	cn := c.conn
	var out wire.CommandResponse
	var sid string
	err := cn.WithSession(ctx, func(id string) error {
		sid = id
		return cn.Core.JSON(ctx, &httpcore.Call{Method: "POST", Path: conn.SessionPath(id) + "/cmd",
			JSON: c.request(ctx, false), Safety: httpcore.Unsafe, Op: "start command",
			SandboxName: cn.SandboxName, SessionID: id}, &out)
	})
	if err != nil {
		return nil, err
	}
	if out.Command.ID == "" {
		return nil, &apierr.DecodeError{Method: "POST", Path: conn.SessionPath(sid) + "/cmd", StatusCode: 200, Err: errors.New("no command id in the answer")}
	}
	ref := Ref{SandboxName: cn.SandboxName, SessionID: sid, CommandID: out.Command.ID}
	return &Handle{c: cn, ref: ref, info: infoFromWire(&out.Command), cmd: c, began: time.Now()}, nil
}

// run runs c attached, its output passed on to stdout and stderr.
func (c *Cmd) run(ctx context.Context, stdout, stderr io.Writer) (*Result, error) {
	ctx, op := observe.Start(ctx, c.conn.Core.Observer(), observe.OpRun, slog.String(observe.KeySandbox, c.conn.SandboxName))
	res, err := c.runAttached(ctx, stdout, stderr)
	endCommand(op, res, err)
	return res, err
}

// endCommand ends op, a command that gave res and err.
func endCommand(op *observe.Op, res *Result, err error) {
	if op == nil {
		return
	}
	outcome := observe.OutcomeError
	var ie *InactivityError
	switch {
	case res != nil && res.TimedOut:
		outcome = observe.OutcomeTimeout
		op.Set(slog.String(observe.KeyEndedBy, "timeout"))
	case errors.As(err, &ie):
		outcome = observe.OutcomeInactivity
		op.Set(slog.String(observe.KeyEndedBy, "inactivity"))
	case res != nil && res.exited && res.exitCode == 0:
		outcome = observe.OutcomeSuccess
	case res != nil && res.exited:
		outcome = observe.OutcomeExit
	}
	op.Set(slog.String(observe.KeyOutcome, outcome))
	if res != nil {
		op.Set(slog.String(observe.KeySession, res.SessionID), slog.String(observe.KeyCommand, res.CommandID),
			slog.Int64(observe.KeyStdoutBytes, res.StdoutBytes), slog.Int64(observe.KeyStderrBytes, res.StderrBytes))
		if res.exited {
			op.Set(slog.Int(observe.KeyExitCode, res.exitCode))
		}
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		// An exit code is the command's answer, not a failure of the call.
		err = nil
	}
	op.End(err)
}

func (c *Cmd) runAttached(ctx context.Context, stdout, stderr io.Writer) (*Result, error) {
	cn := c.conn
	var resp *http.Response
	var sid string
	err := cn.WithSession(ctx, func(id string) error {
		sid = id
		var err error
		resp, err = cn.Core.Do(ctx, &httpcore.Call{Method: "POST", Path: conn.SessionPath(id) + "/cmd",
			JSON: c.request(ctx, true), Safety: httpcore.Unsafe, Op: "run command",
			SandboxName: cn.SandboxName, SessionID: id, Stream: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	return consumeAttached(ctx, cn, resp, c, sid, stdout, stderr)
}

// attach returns a handle to the command ref names, over c, without I/O.
// Package sandbox reaches it through conn.AttachCmd.
func attach(c *conn.Conn, ref Ref) (*Handle, error) {
	if c == nil || c.Core == nil {
		return nil, apierr.Invalid("sandbox", "no client to reach the command with")
	}
	if err := ref.validate(); err != nil {
		return nil, err
	}
	return &Handle{c: c, ref: ref, info: Info{ID: ref.CommandID, SessionID: ref.SessionID}}, nil
}

func captureLimit(cmd *Cmd) int {
	if cmd.CaptureLimit == 0 {
		return DefaultCaptureLimit
	}
	return cmd.CaptureLimit
}

// request is the request that runs cmd, rewritten to run as a user when it
// is bound to one. The environment gets the variables that continue the
// trace of ctx's operation, when there are any (see observe.Env).
func (c *Cmd) request(ctx context.Context, attached bool) *wire.CommandRequest {
	name, args, env, dir := c.Name, c.Args, c.Env, c.Dir
	if extra := observe.Env(ctx, c.propagate); len(extra) > 0 {
		env = maps.Clone(env)
		if env == nil {
			env = make(map[string]string, len(extra))
		}
		maps.Copy(env, extra)
	}
	if c.as != nil && !c.Sudo {
		// The rewrite reads these fields only.
		name, args, env, dir = c.as(&Cmd{Name: c.Name, Args: c.Args, Env: env, Dir: c.Dir})
	}
	if args == nil {
		args = []string{}
	}
	if env == nil {
		env = map[string]string{}
	}
	req := &wire.CommandRequest{Command: name, Args: args, Cwd: dir, Env: env, Sudo: c.Sudo}
	if attached {
		req.Wait, req.Logs = true, true
	}
	if c.Timeout > 0 {
		ms := wire.Millis(c.Timeout)
		req.Timeout = &ms
	}
	return req
}

func infoFromWire(w *wire.Command) Info {
	info := Info{ID: w.ID, Name: w.Name, Args: w.Args, Cwd: w.Cwd, SessionID: w.SessionID,
		ExitCode: w.ExitCode, StartedAt: wire.Time(w.StartedAt)}
	if w.DurationMs != nil {
		info.Duration = wire.Duration(*w.DurationMs)
	}
	return info
}

type attachedRun struct {
	c        *conn.Conn
	cmd      *Cmd
	sid      string
	cid      string
	outW     io.Writer // where stdout goes, beside the capture
	errW     io.Writer
	stdout   *capture.Buffer
	stderr   *capture.Buffer
	began    time.Time
	silent   atomic.Bool
	lastSeen atomic.Int64 // when output last came, or the caller's writer last returned
	writing  atomic.Bool  // whether the caller's writer has the output
	sent     *delivered

	mu   sync.Mutex
	body io.Closer // the stream being read, which the inactivity timer closes
}

func newRun(c *conn.Conn, cmd *Cmd, sid string, stdout, stderr io.Writer) *attachedRun {
	limit := captureLimit(cmd)
	return &attachedRun{c: c, cmd: cmd, sid: sid, outW: stdout, errW: stderr,
		stdout: capture.New(limit), stderr: capture.New(limit), began: time.Now(), sent: newDelivered()}
}

// watch starts the inactivity timer, when the command has one, and returns
// the context to follow the command's logs with (which the timer ends)
// and the function that stops both.
func (r *attachedRun) watch(ctx context.Context) (context.Context, func()) {
	ctx, hush := context.WithCancel(ctx)
	d := r.cmd.InactivityTimeout
	if d <= 0 {
		return ctx, hush
	}
	r.lastSeen.Store(time.Now().UnixNano())
	var timer *time.Timer
	check := func() {
		if r.writing.Load() {
			// The caller's writer is slow, not the command.
			timer.Reset(d)
			return
		}
		idle := time.Since(time.Unix(0, r.lastSeen.Load()))
		if idle >= d {
			r.silent.Store(true)
			r.closeBody()
			hush()
			return
		}
		timer.Reset(d - idle)
	}
	timer = time.AfterFunc(time.Hour, check)
	timer.Reset(d)
	return ctx, func() { timer.Stop(); hush() }
}

func consumeAttached(ctx context.Context, c *conn.Conn, resp *http.Response, cmd *Cmd, sid string, stdout, stderr io.Writer) (*Result, error) {
	defer resp.Body.Close()
	secrets := cmdstream.Secrets(resp)
	if err := cmdstream.CheckContentType(resp.Header, secrets, "command data", sid, ""); err != nil {
		return nil, err
	}
	r := newRun(c, cmd, sid, stdout, stderr)
	r.track(resp.Body)
	fctx, stop := r.watch(ctx)
	defer stop()

	dec := cmdstream.NewDecoder(resp.Body, secrets, sid, "")
	defer dec.Close()
	final, started, loopErr := r.read(dec)
	if final != nil {
		drain(dec, resp.Body)
		return r.finish(infoFromWire(final))
	}
	// The stream ended without its final frame. Unless the run is over
	// for another reason, follow the command through its logs.
	if !r.silent.Load() && ctx.Err() == nil && started && !c.Reattach.Disabled &&
		(errors.Is(loopErr, io.EOF) || isCut(loopErr)) {
		cause := loopErr
		if errors.Is(loopErr, io.EOF) {
			cause = cmdstream.EndedEarly(sid, r.cid, "before the command finished")
		}
		f := &follower{c: c, ref: Ref{SandboxName: c.SandboxName, SessionID: sid, CommandID: r.cid}, op: "run",
			emit: r.write, track: r.track, sent: r.sent}
		info, err := f.run(fctx, 1, cause)
		if err == nil {
			return r.finish(info)
		}
		loopErr = err
	}
	return r.fail(ctx, loopErr, started)
}

// waitStarted is the Wait of a command started detached from cmd: its
// logs followed from the start into its writers, so that Start then Wait
// behaves as Run. When nothing needs its output, the command is only
// waited for.
func waitStarted(ctx context.Context, h *Handle) (*Result, error) {
	cmd := h.cmd
	r := newRun(h.c, cmd, h.ref.SessionID, cmd.Stdout, cmd.Stderr)
	r.cid, r.began = h.ref.CommandID, h.began
	fctx, stop := r.watch(ctx)
	defer stop()
	var info Info
	var err error
	if cmd.Stdout == nil && cmd.Stderr == nil && cmd.CaptureLimit < 0 && cmd.InactivityTimeout == 0 {
		info, err = wait(fctx, h.c, h.ref)
	} else {
		f := &follower{c: h.c, ref: h.ref, op: "wait", emit: r.write, track: r.track, sent: r.sent, known: h.finished()}
		info, err = f.run(fctx, 0, nil)
	}
	if err != nil {
		return r.fail(ctx, err, true)
	}
	h.remember(info)
	return r.finish(info)
}

// read reads the attached stream until its final frame, which it returns,
// or until it ends or fails.
func (r *attachedRun) read(dec *cmdstream.Decoder) (final *wire.Command, started bool, err error) {
	for {
		kind, data, command, err := dec.NextParts()
		if err != nil {
			return nil, started, err
		}
		switch kind {
		case cmdstream.KindCommand:
			if !started {
				started = true
				r.cid = command.ID
				dec.SetCommandID(r.cid)
				continue
			}
			if command.ExitCode == nil {
				return nil, started, &apierr.StreamError{Code: "malformed_frame", Message: "finish line without an exit code", SessionID: r.sid, CommandID: r.cid}
			}
			if command.ID != r.cid {
				return nil, started, otherCommand(r.sid, r.cid, "the final line")
			}
			return command, started, nil
		case cmdstream.KindStdout, cmdstream.KindStderr:
			if !started {
				return nil, started, &apierr.StreamError{Code: "malformed_frame", Message: "log line before the command line", SessionID: r.sid}
			}
			r.sent.add(streamIndex(kind), data)
			if err := r.write(kind, data); err != nil {
				return nil, started, err
			}
		}
	}
}

// fail returns the error of a run that ended without an exit code and,
// once the command has started, its partial result: the output captured so
// far, the ids to reattach with, and ExitCode -1.
func (r *attachedRun) fail(ctx context.Context, err error, started bool) (*Result, error) {
	var res *Result
	if r.cid != "" {
		res = r.partial()
	}
	switch {
	case r.silent.Load():
		ie := &InactivityError{CommandID: r.cid, SessionID: r.sid, Silence: r.cmd.InactivityTimeout, Result: res}
		if r.cid != "" {
			kerr := r.kill(ctx)
			ie.Killed, ie.KillErr = kerr == nil, kerr
		} else {
			ie.Result = r.partial()
		}
		return res, ie
	case ctx.Err() != nil:
		if !r.cmd.DetachOnCancel && r.cid != "" {
			if kerr := r.kill(ctx); kerr != nil {
				return res, fmt.Errorf("%w (killing command %s failed: %w)", ctx.Err(), r.cid, kerr)
			}
		}
		return res, ctx.Err()
	case errors.Is(err, io.EOF):
		what := "before the command finished"
		if !started {
			what = "before the command started"
		}
		return res, cmdstream.EndedEarly(r.sid, r.cid, what)
	}
	return res, err
}

// finish returns the result of a command that exited.
func (r *attachedRun) finish(info Info) (*Result, error) {
	res := r.partial()
	if !info.StartedAt.IsZero() {
		res.StartedAt = info.StartedAt
	}
	if info.Duration > 0 {
		res.Duration = info.Duration
	}
	res.setExit(*info.ExitCode, r.cmd.Timeout)
	if res.ExitCode() != 0 {
		return res, &ExitError{Result: res}
	}
	return res, nil
}

// track makes body the stream the inactivity timer closes.
func (r *attachedRun) track(body io.Closer) {
	r.mu.Lock()
	r.body = body
	r.mu.Unlock()
	if r.silent.Load() {
		body.Close()
	}
}

func (r *attachedRun) closeBody() {
	r.mu.Lock()
	b := r.body
	r.mu.Unlock()
	if b != nil {
		b.Close()
	}
}

// write passes output on to the caller's writer and keeps it; whoever
// read it has counted it as delivered. The inactivity clock stops while
// the writer has it: a slow writer is not a silent command.
func (r *attachedRun) write(k cmdstream.Kind, data []byte) error {
	r.lastSeen.Store(time.Now().UnixNano())
	w, cp, name := r.outW, r.stdout, "stdout"
	if k == cmdstream.KindStderr {
		w, cp, name = r.errW, r.stderr, "stderr"
	}
	_, _ = cp.Write(data)
	if w == nil {
		return nil
	}
	r.writing.Store(true)
	_, err := w.Write(data)
	r.lastSeen.Store(time.Now().UnixNano())
	r.writing.Store(false)
	if err != nil {
		return &writeError{err: fmt.Errorf("vercel sandbox: writing %s of command %s: %w", name, r.cid, err)}
	}
	return nil
}

func (r *attachedRun) partial() *Result {
	return &Result{CommandID: r.cid, SessionID: r.sid, StartedAt: r.began,
		Duration: time.Since(r.began), Stdout: r.stdout.Bytes(), Stderr: r.stderr.Bytes(),
		StdoutBytes: r.stdout.Total(), StderrBytes: r.stderr.Total(),
		StdoutTruncated: r.stdout.Truncated(), StderrTruncated: r.stderr.Truncated()}
}

// kill sends SIGKILL on a context that outlives the caller's cancellation
// by at most 10 seconds.
func (r *attachedRun) kill(ctx context.Context) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := sendKill(kctx, r.c.Core, Ref{SandboxName: r.c.SandboxName, SessionID: r.sid, CommandID: r.cid}, SIGKILL)
	if errors.Is(err, apierr.ErrGone) {
		return nil // the session is gone, and the command with it
	}
	return err
}

// Draining bounds: what is read of an attached stream after its final
// frame, so that its connection serves the next call. A server that sends
// more, or does not end the stream soon, loses the connection.
const (
	drainBytes = 64 << 10
	drainTime  = 250 * time.Millisecond
)

// drain reads what follows the final frame (the end of the body, as a
// rule) before body is closed.
func drain(dec *cmdstream.Decoder, body io.Closer) {
	if dec.Ended() {
		return
	}
	t := time.AfterFunc(drainTime, func() { body.Close() })
	dec.Drain(drainBytes)
	t.Stop()
}

func teeWriter(w io.Writer, c io.Writer) io.Writer {
	if w == nil {
		return c
	}
	return io.MultiWriter(w, c)
}
