package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/capture"
	"github.com/sbx-go/vercel-sandbox/internal/cmdstream"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// An attached run is one POST …/cmd whose answer streams the command: a
// line naming the started command, its output, then a line with its exit
// code. A stream cut before the final line (hosted Vercel cuts every
// stream after about six minutes) is followed through the command's logs
// (see follow.go), never by running the command again. Everything else
// that can end it early is decided here, after the stream stops: silence
// past InactivityTimeout (the timer closes the body, the command is
// killed), the caller's context (killed with KillOnCancel), and a cut that
// cannot be followed (an ErrStreamEnded, never an invented exit code).
// Once the command has started, the output captured so far and its ids
// travel with the error as a partial Result (ExitCode -1). A final line
// about another command is refused, not taken as this one's exit.

// Run runs cmd attached on c. Only package sandbox can make a c: call
// (*sandbox.Sandbox).Run, which documents the behaviour.
func Run(ctx context.Context, c *conn.Conn, cmd *Cmd) (*Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	if err := checkConn(c); err != nil {
		return nil, err
	}
	var resp *http.Response
	var sid string
	err := c.WithSession(ctx, func(id string) error {
		sid = id
		var err error
		resp, err = c.Core.Do(ctx, &httpcore.Call{Method: "POST", Path: conn.SessionPath(id) + "/cmd",
			JSON: request(cmd, true), Safety: httpcore.Unsafe, Op: "run command",
			SandboxName: c.SandboxName, SessionID: id, Stream: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	return consumeAttached(ctx, c, resp, cmd, sid)
}

// Output runs cmd attached on c and returns its captured stdout. Only
// package sandbox can make a c: call (*sandbox.Sandbox).Output.
func Output(ctx context.Context, c *conn.Conn, cmd *Cmd) ([]byte, error) {
	res, err := Run(ctx, c, cmd)
	if res == nil {
		return nil, err
	}
	return res.Stdout, err
}

// CombinedOutput runs cmd attached on c and returns stdout and stderr
// interleaved. Only package sandbox can make a c: call
// (*sandbox.Sandbox).CombinedOutput.
func CombinedOutput(ctx context.Context, c *conn.Conn, cmd *Cmd) ([]byte, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	both := capture.New(captureLimit(cmd))
	tee := *cmd
	tee.Stdout = teeWriter(cmd.Stdout, both)
	tee.Stderr = teeWriter(cmd.Stderr, both)
	_, err := Run(ctx, c, &tee)
	return both.Bytes(), err
}

// Start starts cmd detached on c. Only package sandbox can make a c: call
// (*sandbox.Sandbox).Start.
func Start(ctx context.Context, c *conn.Conn, cmd *Cmd) (*Handle, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	if err := checkConn(c); err != nil {
		return nil, err
	}
	var out wire.CommandResponse
	var sid string
	err := c.WithSession(ctx, func(id string) error {
		sid = id
		return c.Core.JSON(ctx, &httpcore.Call{Method: "POST", Path: conn.SessionPath(id) + "/cmd",
			JSON: request(cmd, false), Safety: httpcore.Unsafe, Op: "start command",
			SandboxName: c.SandboxName, SessionID: id}, &out)
	})
	if err != nil {
		return nil, err
	}
	if out.Command.ID == "" {
		return nil, &apierr.DecodeError{Method: "POST", Path: conn.SessionPath(sid) + "/cmd", StatusCode: 200, Err: errors.New("no command id in the answer")}
	}
	ref := Ref{SandboxName: c.SandboxName, SessionID: sid, CommandID: out.Command.ID}
	return &Handle{c: c, ref: ref, info: infoFromWire(&out.Command)}, nil
}

func checkConn(c *conn.Conn) error {
	if c == nil || c.Core == nil || c.WithSession == nil {
		return apierr.Invalid("sandbox", "no sandbox to run the command in")
	}
	return nil
}

func captureLimit(cmd *Cmd) int {
	if cmd.CaptureLimit == 0 {
		return DefaultCaptureLimit
	}
	return cmd.CaptureLimit
}

func request(cmd *Cmd, attached bool) *wire.CommandRequest {
	args := cmd.Args
	if args == nil {
		args = []string{}
	}
	env := cmd.Env
	if env == nil {
		env = map[string]string{}
	}
	req := &wire.CommandRequest{Command: cmd.Name, Args: args, Cwd: cmd.Dir, Env: env, Sudo: cmd.Sudo}
	if attached {
		req.Wait, req.Logs = true, true
	}
	if cmd.Timeout > 0 {
		ms := wire.Millis(cmd.Timeout)
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

func consumeAttached(ctx context.Context, c *conn.Conn, resp *http.Response, cmd *Cmd, sid string) (*Result, error) {
	defer resp.Body.Close()
	secrets := cmdstream.Secrets(resp)
	if err := cmdstream.CheckContentType(resp.Header, secrets, "command data", sid, ""); err != nil {
		return nil, err
	}
	limit := captureLimit(cmd)
	r := &attachedRun{c: c, cmd: cmd, sid: sid, stdout: capture.New(limit), stderr: capture.New(limit),
		began: time.Now(), sent: newDelivered()}
	r.track(resp.Body)

	var timer *time.Timer
	if cmd.InactivityTimeout > 0 {
		r.lastSeen.Store(time.Now().UnixNano())
		check := func() {
			if r.writing.Load() {
				// The caller's writer is slow, not the command.
				timer.Reset(cmd.InactivityTimeout)
				return
			}
			idle := time.Since(time.Unix(0, r.lastSeen.Load()))
			if idle >= cmd.InactivityTimeout {
				r.silent.Store(true)
				r.closeBody()
				return
			}
			timer.Reset(cmd.InactivityTimeout - idle)
		}
		timer = time.AfterFunc(time.Hour, check)
		timer.Reset(cmd.InactivityTimeout)
		defer timer.Stop()
	}

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
		info, err := f.run(ctx, 1, cause)
		if err == nil {
			return r.finish(info)
		}
		loopErr = err
	}
	return r.fail(ctx, loopErr, started)
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
		if r.cmd.KillOnCancel && r.cid != "" {
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
	res.ExitCode = *info.ExitCode
	if !info.StartedAt.IsZero() {
		res.StartedAt = info.StartedAt
	}
	if info.Duration > 0 {
		res.Duration = info.Duration
	}
	if res.ExitCode != 0 {
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
	w, cp, name := r.cmd.Stdout, r.stdout, "stdout"
	if k == cmdstream.KindStderr {
		w, cp, name = r.cmd.Stderr, r.stderr, "stderr"
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
	return &Result{CommandID: r.cid, SessionID: r.sid, ExitCode: -1, StartedAt: r.began,
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
	if errors.Is(err, ErrGone) {
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
