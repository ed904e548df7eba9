package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/capture"
	"github.com/sbx-go/vercel-sandbox/internal/cmdstream"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Command returns a Cmd for name and args, to pass to Run, Start, Output or
// CombinedOutput after setting any other field.
func Command(name string, args ...string) *command.Cmd {
	return &command.Cmd{Name: name, Args: args}
}

func commandRequest(cmd *command.Cmd, attached bool) *wire.CommandRequest {
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
		req.Timeout = ptr(durMs(cmd.Timeout))
	}
	return req
}

func commandInfo(w *wire.Command) command.Info {
	return command.Info{ID: w.ID, Name: w.Name, Args: w.Args, Cwd: w.Cwd, SessionID: w.SessionID,
		ExitCode: w.ExitCode, StartedAt: msTime(w.StartedAt), Duration: msDurP(w.DurationMs)}
}

func isNDJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == wire.ContentNDJSON
}

// Run runs cmd attached: its output reaches cmd.Stdout and cmd.Stderr as
// it is produced, and Run returns when the command ends. The result holds
// the exit code and the captured output. A non-zero exit code gives the
// result and an *command.ExitError. The command is sent once; it is never
// re-sent after a failure that may have started it.
func (s *Sandbox) Run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	var resp *http.Response
	var sid string
	err := s.withSession(ctx, func(id string) error {
		sid = id
		var err error
		resp, err = s.c.core.Do(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(id) + "/cmd",
			JSON: commandRequest(cmd, true), Safety: httpcore.Unsafe, Op: "run command",
			SandboxName: s.name, SessionID: id, Stream: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.c.consumeAttached(ctx, resp, cmd, s.name, sid)
}

type attachedRun struct {
	c        *Client
	cmd      *command.Cmd
	name     string
	sid      string
	cid      string
	stdout   *capture.Buffer
	stderr   *capture.Buffer
	began    time.Time
	silent   atomic.Bool
	lastSeen atomic.Int64
}

func (c *Client) consumeAttached(ctx context.Context, resp *http.Response, cmd *command.Cmd, name, sid string) (*command.Result, error) {
	body := resp.Body
	var closeOnce sync.Once
	closeBody := func() { closeOnce.Do(func() { body.Close() }) }
	defer closeBody()
	if !isNDJSON(resp.Header) {
		return nil, &apierr.StreamError{Code: "unexpected_content_type", SessionID: sid,
			Message: fmt.Sprintf("expected a stream of command data (%s), got %q", wire.ContentNDJSON, resp.Header.Get("Content-Type"))}
	}
	limit := cmd.CaptureLimit
	if limit == 0 {
		limit = command.DefaultCaptureLimit
	}
	r := &attachedRun{c: c, cmd: cmd, name: name, sid: sid, stdout: capture.New(limit), stderr: capture.New(limit), began: time.Now()}

	var timer *time.Timer
	if cmd.InactivityTimeout > 0 {
		r.lastSeen.Store(time.Now().UnixNano())
		check := func() {
			idle := time.Since(time.Unix(0, r.lastSeen.Load()))
			if idle >= cmd.InactivityTimeout {
				r.silent.Store(true)
				closeBody()
				return
			}
			timer.Reset(cmd.InactivityTimeout - idle)
		}
		timer = time.AfterFunc(time.Hour, check)
		timer.Reset(cmd.InactivityTimeout)
		defer timer.Stop()
	}

	dec := cmdstream.NewDecoder(body, sid, "")
	var final *wire.Command
	started := false
	var loopErr error
	for final == nil {
		f, err := dec.Next()
		if err != nil {
			loopErr = err
			break
		}
		switch f.Kind {
		case cmdstream.KindCommand:
			if !started {
				started = true
				r.cid = f.Command.ID
				dec.SetCommandID(r.cid)
				continue
			}
			if f.Command.ExitCode == nil {
				loopErr = &apierr.StreamError{Code: "malformed_frame", Message: "finish line without an exit code", SessionID: sid, CommandID: r.cid}
				break
			}
			final = f.Command
		case cmdstream.KindStdout, cmdstream.KindStderr:
			if !started {
				loopErr = &apierr.StreamError{Code: "malformed_frame", Message: "log line before the command line", SessionID: sid}
				break
			}
			r.lastSeen.Store(time.Now().UnixNano())
			if err := r.write(f.Kind, f.Data); err != nil {
				loopErr = err
			}
		}
		if loopErr != nil {
			break
		}
	}
	if final != nil {
		res := r.result(final)
		if res.ExitCode != 0 {
			return res, &command.ExitError{Result: res}
		}
		return res, nil
	}
	// The stream ended without its final frame.
	switch {
	case r.silent.Load():
		ie := &command.InactivityError{CommandID: r.cid, SessionID: sid, Silence: cmd.InactivityTimeout, Result: r.partial()}
		if r.cid != "" {
			kerr := r.kill(ctx)
			ie.Killed, ie.KillErr = kerr == nil, kerr
		}
		return nil, ie
	case ctx.Err() != nil:
		if cmd.KillOnCancel && r.cid != "" {
			if kerr := r.kill(ctx); kerr != nil {
				return nil, fmt.Errorf("%w (killing command %s failed: %w)", ctx.Err(), r.cid, kerr)
			}
		}
		return nil, ctx.Err()
	case errors.Is(loopErr, io.EOF):
		what := "before the command finished"
		if !started {
			what = "before the command started"
		}
		return nil, cmdstream.EndedEarly(sid, r.cid, what)
	}
	return nil, loopErr
}

func (r *attachedRun) write(k cmdstream.Kind, data []byte) error {
	w, cp := r.cmd.Stdout, r.stdout
	if k == cmdstream.KindStderr {
		w, cp = r.cmd.Stderr, r.stderr
	}
	_, _ = cp.Write(data)
	if w != nil {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("vercel sandbox: writing %s of command %s: %w", map[bool]string{true: "stderr", false: "stdout"}[k == cmdstream.KindStderr], r.cid, err)
		}
	}
	return nil
}

func (r *attachedRun) partial() *command.Result {
	return &command.Result{CommandID: r.cid, SessionID: r.sid, ExitCode: -1, StartedAt: r.began,
		Duration: time.Since(r.began), Stdout: r.stdout.Bytes(), Stderr: r.stderr.Bytes(),
		StdoutBytes: r.stdout.Total(), StderrBytes: r.stderr.Total(),
		StdoutTruncated: r.stdout.Truncated(), StderrTruncated: r.stderr.Truncated()}
}

func (r *attachedRun) result(w *wire.Command) *command.Result {
	res := r.partial()
	res.ExitCode = *w.ExitCode
	if w.StartedAt != 0 {
		res.StartedAt = msTime(w.StartedAt)
	}
	if w.DurationMs != nil {
		res.Duration = msDur(*w.DurationMs)
	}
	return res
}

// kill sends SIGKILL on a context that outlives the caller's cancellation
// by at most 10 seconds.
func (r *attachedRun) kill(ctx context.Context) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := r.c.KillCommand(kctx, command.Ref{SandboxName: r.name, SessionID: r.sid, CommandID: r.cid}, command.SIGKILL)
	if errors.Is(err, ErrGone) {
		return nil // the session is gone, and the command with it
	}
	return err
}

// Output runs cmd attached and returns its captured stdout. A non-zero
// exit code gives the output and an *command.ExitError.
func (s *Sandbox) Output(ctx context.Context, cmd *command.Cmd) ([]byte, error) {
	res, err := s.Run(ctx, cmd)
	if res == nil {
		return nil, err
	}
	return res.Stdout, err
}

// CombinedOutput runs cmd attached and returns stdout and stderr
// interleaved as they arrived, up to the capture limit.
func (s *Sandbox) CombinedOutput(ctx context.Context, cmd *command.Cmd) ([]byte, error) {
	limit := cmd.CaptureLimit
	if limit == 0 {
		limit = command.DefaultCaptureLimit
	}
	both := capture.New(limit)
	c := *cmd
	c.Stdout = teeWriter(cmd.Stdout, both)
	c.Stderr = teeWriter(cmd.Stderr, both)
	_, err := s.Run(ctx, &c)
	return both.Bytes(), err
}

func teeWriter(w io.Writer, c io.Writer) io.Writer {
	if w == nil {
		return c
	}
	return io.MultiWriter(w, c)
}

// Start starts cmd detached and returns at once with a handle to wait on,
// kill or read the logs of. cmd.Stdout, cmd.Stderr and InactivityTimeout do
// not apply; use the handle's CopyOutput or Logs. The command is sent once.
func (s *Sandbox) Start(ctx context.Context, cmd *command.Cmd) (*command.Handle, error) {
	if err := cmd.Validate(); err != nil {
		return nil, err
	}
	var out wire.CommandResponse
	var sid string
	err := s.withSession(ctx, func(id string) error {
		sid = id
		return s.c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(id) + "/cmd",
			JSON: commandRequest(cmd, false), Safety: httpcore.Unsafe, Op: "start command",
			SandboxName: s.name, SessionID: id}, &out)
	})
	if err != nil {
		return nil, err
	}
	if out.Command.ID == "" {
		return nil, &apierr.DecodeError{Method: "POST", Path: sessionPath(sid) + "/cmd", StatusCode: 200, Err: errors.New("no command id in the answer")}
	}
	ref := command.Ref{SandboxName: s.name, SessionID: sid, CommandID: out.Command.ID}
	return command.NewStartedHandle(s.c, ref, commandInfo(&out.Command))
}

// Attach returns a handle to a command of this sandbox's current session.
func (s *Sandbox) Attach(commandID string) (*command.Handle, error) {
	return command.NewHandle(s.c, command.Ref{SandboxName: s.name, SessionID: s.SessionID(), CommandID: commandID})
}

// Attach returns a handle to the command ref names, for example one
// started by another process and stored as text (see command.ParseRef).
func (c *Client) Attach(ref command.Ref) (*command.Handle, error) {
	return command.NewHandle(c, ref)
}

func cmdPath(ref command.Ref) string {
	return sessionPath(ref.SessionID) + "/cmd/" + url.PathEscape(ref.CommandID)
}

func checkRef(ref command.Ref) error {
	if err := validateID("Ref.SessionID", ref.SessionID); err != nil {
		return err
	}
	return validateID("Ref.CommandID", ref.CommandID)
}

// CommandInfo returns the state of a command; with wait it blocks until
// the command has finished. It implements command.API.
func (c *Client) CommandInfo(ctx context.Context, ref command.Ref, wait bool) (command.Info, error) {
	if err := checkRef(ref); err != nil {
		return command.Info{}, err
	}
	var q url.Values
	if wait {
		q = url.Values{"wait": {"true"}}
	}
	var out wire.CommandResponse
	err := c.core.JSON(ctx, &httpcore.Call{Method: "GET", Path: cmdPath(ref), Query: q, Op: "get command",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID, Stream: wait}, &out)
	if err != nil {
		return command.Info{}, err
	}
	return commandInfo(&out.Command), nil
}

// KillCommand sends sig to a command. It implements command.API.
func (c *Client) KillCommand(ctx context.Context, ref command.Ref, sig command.Signal) (command.Info, error) {
	if err := checkRef(ref); err != nil {
		return command.Info{}, err
	}
	if sig <= 0 {
		return command.Info{}, apierr.Invalid("signal", "must be positive, got %d", sig)
	}
	var out wire.CommandResponse
	// Delivering the same signal twice is harmless for the signals used to
	// stop a command, so the call is retried like a read.
	err := c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: cmdPath(ref) + "/kill",
		JSON: wire.KillRequest{Signal: int(sig)}, Op: "kill command",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID}, &out)
	if err != nil {
		return command.Info{}, err
	}
	return commandInfo(&out.Command), nil
}

// CommandLogs opens a command's log stream (NDJSON log lines replayed from
// the start). It implements command.API; most callers want
// command.Handle.Logs instead.
func (c *Client) CommandLogs(ctx context.Context, ref command.Ref) (io.ReadCloser, error) {
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	resp, err := c.core.Do(ctx, &httpcore.Call{Method: "GET", Path: cmdPath(ref) + "/logs", Op: "command logs",
		SandboxName: ref.SandboxName, SessionID: ref.SessionID, Stream: true})
	if err != nil {
		return nil, err
	}
	if !isNDJSON(resp.Header) {
		resp.Body.Close()
		return nil, &apierr.StreamError{Code: "unexpected_content_type", SessionID: ref.SessionID, CommandID: ref.CommandID,
			Message: fmt.Sprintf("expected a stream of logs (%s), got %q", wire.ContentNDJSON, resp.Header.Get("Content-Type"))}
	}
	return resp.Body, nil
}
