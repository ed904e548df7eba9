package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Defaults of TaskOptions.
const (
	DefaultInactivityTimeout = 60 * time.Second
	DefaultPollInterval      = 250 * time.Millisecond
)

// TaskRef is what a task system stores to find a task's sandbox again,
// from any process.
type TaskRef struct {
	SandboxName string `json:"sandboxName,omitempty"`
	SessionID   string `json:"sessionId,omitempty"`
}

// RefOf returns the TaskRef of sb.
func RefOf(sb *sandbox.Sandbox) TaskRef {
	return TaskRef{SandboxName: sb.Name(), SessionID: sb.SessionID()}
}

// StopOutcome is what StopTask found.
type StopOutcome string

// Stop outcomes.
const (
	// Stopped: the session was running and has now stopped.
	Stopped StopOutcome = "stopped"
	// AlreadyStopped: the session had stopped before (410 Gone, or a
	// stopped status).
	AlreadyStopped StopOutcome = "already_stopped"
	// NothingToStop: no such sandbox or session (404).
	NothingToStop StopOutcome = "not_found"
)

// StopTask stops a task's sandbox known only by ref, for example from
// another process than the one that started it. With a session id it stops
// exactly that session (not a newer one the sandbox may have); otherwise it
// stops the named sandbox's current session. It looks the session up
// first, so that a session that had already stopped is reported as such even
// when the API answers a repeated stop with 200. Both 410 (already stopped) and
// 404 (nothing to stop) are successes, told apart by the outcome. Other
// failures are an *Error with CodeStopFailed, or CodeInvalidInput for an
// empty ref.
func StopTask(ctx context.Context, c *sandbox.Client, ref TaskRef) (StopOutcome, error) {
	if c == nil || ref.SessionID == "" && ref.SandboxName == "" {
		return "", &Error{Code: CodeInvalidInput, Message: "a sandbox name or session id is required"}
	}
	var (
		res *sandbox.StopResult
		err error
	)
	if ref.SessionID != "" {
		// The API may answer a repeated stop with 200, so look first.
		var sess sandbox.Session
		sess, _, err = c.GetSession(ctx, ref.SessionID)
		switch {
		case err == nil && sess.Status.Terminal():
			return AlreadyStopped, nil
		case err == nil:
			res, err = c.StopSession(ctx, ref.SessionID)
		}
	} else {
		res, err = c.Stop(ctx, ref.SandboxName)
	}
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		return NothingToStop, nil
	case errors.Is(err, sandbox.ErrGone):
		return AlreadyStopped, nil
	case errors.Is(err, sandbox.ErrInvalidInput):
		return "", newError(CodeInvalidInput, err)
	case err != nil:
		return "", classify(ctx, CodeStopFailed, err)
	case res.AlreadyStopped:
		return AlreadyStopped, nil
	}
	return Stopped, nil
}

// TaskOptions configure a Task.
type TaskOptions struct {
	// StopRequested is polled while a step runs (every PollInterval);
	// when it reports true the step is cancelled, its command killed, the
	// task ended with CodeStopped and its sandbox stopped. A poll error is
	// ignored (the next poll tries again). Nil never stops.
	StopRequested func(ctx context.Context) (bool, error)
	// PollInterval is how often StopRequested is called; 0 means 250 ms.
	PollInterval time.Duration
	// InactivityTimeout is given to commands run with Task.Run that set
	// none: a command silent for that long is killed and the task ends
	// with CodeInactive. 0 means 60 s; negative disables it.
	InactivityTimeout time.Duration
	// Deadline ends the task: a step running then is cancelled (its
	// command killed), the sandbox is stopped, the error has CodeTimeout
	// and no later step runs. Zero means none.
	Deadline time.Time
	// StopTimeout bounds the stop of the sandbox; 0 means
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// Observer receives an execute phase per step and the stop.
	Observer Observer
}

// Task runs the steps of a long task in one sandbox, and guarantees that
// once the task has ended (stop requested, deadline passed, a command went
// silent, End called, or the caller's context cancelled during a step) no
// further step runs: Do and Run then return an *Error with CodeTaskEnded
// without doing anything. Ending a task stops its sandbox. A Task is safe
// for concurrent use.
type Task struct {
	sb   *sandbox.Sandbox
	opts TaskOptions

	mu      sync.Mutex
	endErr  error // why the task ended; nil while open
	stopErr error
	stopped bool
	steps   int
}

// NewTask returns a task running in sb.
func NewTask(sb *sandbox.Sandbox, opts TaskOptions) *Task {
	return &Task{sb: sb, opts: opts}
}

// Sandbox returns the task's sandbox.
func (t *Task) Sandbox() *sandbox.Sandbox { return t.sb }

// Err returns why the task ended (an *Error), or nil while it is open.
func (t *Task) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.endErr
}

// StopErr returns the error of stopping the sandbox when the task ended,
// if that failed.
func (t *Task) StopErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopErr
}

// Steps returns how many steps the task has started.
func (t *Task) Steps() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.steps
}

var (
	errStopRequested = errors.New("stop requested")
	errTaskDeadline  = fmt.Errorf("task deadline passed: %w", context.DeadlineExceeded)
)

// Do runs fn as one step of the task. fn gets a context that is cancelled
// when a stop is requested or the deadline passes; the commands it runs
// are killed then (unless they set DetachOnCancel), so that the remote
// work ends too. Do returns
// fn's error, or an *Error when the task ended during the step
// (CodeStopped, CodeTimeout, CodeInactive, CodeCancelled) or before it
// (CodeTaskEnded, fn not called).
func (t *Task) Do(ctx context.Context, name string, fn func(ctx context.Context, sb *sandbox.Sandbox) error) error {
	switch {
	case t.sb == nil:
		return newError(CodeInvalidInput, &sandbox.InputError{Field: "sb", Reason: "NewTask got a nil sandbox"})
	case fn == nil:
		return newError(CodeInvalidInput, &sandbox.InputError{Field: "fn", Reason: "nil step function"})
	}
	t.mu.Lock()
	if t.endErr != nil {
		err := t.endErr
		t.mu.Unlock()
		return &Error{Code: CodeTaskEnded, Err: err}
	}
	if !t.opts.Deadline.IsZero() && !time.Now().Before(t.opts.Deadline) {
		t.mu.Unlock()
		err := t.end(ctx, newError(CodeTimeout, errTaskDeadline))
		return &Error{Code: CodeTaskEnded, Err: err}
	}
	t.steps++
	t.mu.Unlock()

	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !t.opts.Deadline.IsZero() {
		var cancelDeadline context.CancelFunc
		sctx, cancelDeadline = context.WithDeadlineCause(sctx, t.opts.Deadline, errTaskDeadline)
		defer cancelDeadline()
	}
	var wg sync.WaitGroup
	if t.opts.StopRequested != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.poll(sctx, cancel)
		}()
	}
	tr := begin(sctx, t.opts.Observer, PhaseEvent{Phase: PhaseExecute, Step: name, SandboxName: t.sb.Name(), SessionID: t.sb.SessionID()})
	err := fn(sctx, t.sb)
	cancel(nil) // ends the poller
	wg.Wait()

	cause := context.Cause(sctx)
	var ie *command.InactivityError
	var ending *Error
	switch {
	case errors.Is(cause, errStopRequested):
		ending = newError(CodeStopped, errors.Join(errStopRequested, err))
	case errors.Is(cause, errTaskDeadline):
		ending = newError(CodeTimeout, errors.Join(errTaskDeadline, err))
	case errors.As(err, &ie):
		ending = newError(CodeInactive, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		ending = newError(CodeTimeout, errors.Join(ctx.Err(), err))
	case ctx.Err() != nil:
		ending = newError(CodeCancelled, errors.Join(ctx.Err(), err))
	}
	if ending == nil && err != nil && t.stopRequested(ctx) {
		// The step failed because another process stopped the sandbox
		// before the poll noticed the request.
		ending = newError(CodeStopped, errors.Join(errStopRequested, err))
	}
	if ending == nil {
		tr.end(sctx, err)
		return err
	}
	tr.end(sctx, ending)
	return t.end(ctx, ending)
}

// stopRequested asks StopRequested once, on a short context detached from
// ctx's cancellation.
func (t *Task) stopRequested(ctx context.Context) bool {
	if t.opts.StopRequested == nil {
		return false
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	stop, err := t.opts.StopRequested(pctx)
	return err == nil && stop
}

func (t *Task) poll(ctx context.Context, cancel context.CancelCauseFunc) {
	iv := t.opts.PollInterval
	if iv <= 0 {
		iv = DefaultPollInterval
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		if stop, err := t.opts.StopRequested(ctx); err == nil && stop {
			cancel(errStopRequested)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Run runs a command like cmd as a step (see Do), attached, killed when
// the step's context ends, with the task's inactivity timeout unless cmd
// sets its own. cmd only describes the command (see CommandStep); it need
// not come from Command.
func (t *Task) Run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if err := cmd.Validate(); err != nil {
		return nil, newError(CodeInvalidInput, err)
	}
	inactivity := cmd.InactivityTimeout
	if inactivity == 0 {
		switch it := t.opts.InactivityTimeout; {
		case it == 0:
			inactivity = DefaultInactivityTimeout
		case it > 0:
			inactivity = it
		}
	}
	var res *command.Result
	err := t.Do(ctx, cmd.String(), func(ctx context.Context, sb *sandbox.Sandbox) error {
		c := commandLike(sb, cmd)
		c.InactivityTimeout = inactivity
		var err error
		res, err = c.Run(ctx)
		return err
	})
	return res, err
}

// End ends the task (no further step runs) and stops its sandbox. It
// returns the error the task ended with: an *Error with CodeStopped when
// End ended it, or the earlier reason. Calling it again does nothing more.
func (t *Task) End(ctx context.Context) error {
	return t.end(ctx, &Error{Code: CodeStopped})
}

// end records why the task ended (the first reason wins) and stops the
// sandbox once.
func (t *Task) end(ctx context.Context, why *Error) error {
	t.mu.Lock()
	if t.endErr == nil {
		t.endErr = why
	}
	first := !t.stopped
	t.stopped = true
	err := t.endErr
	t.mu.Unlock()
	if first {
		_, serr := stopSandbox(ctx, t.sb, t.opts.StopTimeout, t.opts.Observer, nil)
		t.mu.Lock()
		t.stopErr = serr
		t.mu.Unlock()
	}
	return err
}

// Decision is how Acquire obtained a sandbox.
type Decision string

// Acquire decisions.
const (
	// Reused: the sandbox was healthy and is used as it is.
	Reused Decision = "reused"
	// Resumed: the sandbox existed but its session had stopped (410) or
	// did not answer; a new session was booted for it.
	Resumed Decision = "resumed"
	// Created: no such sandbox; a new one was created.
	Created Decision = "created"
)

// Acquired is the result of Acquire.
type Acquired struct {
	Sandbox  *sandbox.Sandbox
	Decision Decision
	// Health is the probe's verdict that led to the decision.
	Health sandbox.Health
}

// Acquire returns a sandbox for p.Name, deciding with a health probe whether
// to reuse a kept-alive sandbox or to recreate it:
//
//   - healthy: reuse it;
//   - stopped (410) or unhealthy: stop what is left of the session (when
//     unhealthy) and boot a new session of the same sandbox (its
//     filesystem is restored if it is persistent);
//   - not found: create it (see Create).
//
// p.Name is required. Failures are *Error (CodeCreationFailed for a failed
// create or resume).
func Acquire(ctx context.Context, c *sandbox.Client, p sandbox.CreateParams, hp sandbox.HealthParams) (*Acquired, error) {
	if c == nil {
		return nil, &Error{Code: CodeInvalidInput, Message: "no sandbox client given"}
	}
	if p.Name == "" {
		return nil, &Error{Code: CodeInvalidInput, Message: "name: is required to find the sandbox again"}
	}
	if err := sandbox.ValidateName(p.Name); err != nil {
		return nil, newError(CodeInvalidInput, err)
	}
	h, err := c.Health(ctx, p.Name, hp)
	if err != nil {
		return nil, newError(CodeInvalidInput, err)
	}
	switch h.State {
	case sandbox.Healthy:
		sb, err := c.Get(ctx, p.Name)
		if err == nil {
			return &Acquired{Sandbox: sb, Decision: Reused, Health: h}, nil
		}
		if !errors.Is(err, sandbox.ErrNotFound) {
			return nil, classify(ctx, CodeCreationFailed, err)
		}
	case sandbox.Stopped, sandbox.Unhealthy:
		if h.State == sandbox.Unhealthy && h.SessionID != "" {
			// Do not leave a session that does not answer running.
			if _, err := c.StopSession(ctx, h.SessionID); err != nil && !errors.Is(err, sandbox.ErrGone) && !errors.Is(err, sandbox.ErrNotFound) {
				return nil, classify(ctx, CodeCreationFailed, err)
			}
		}
		sb, err := c.Resume(ctx, p.Name)
		if err == nil {
			return &Acquired{Sandbox: sb, Decision: Resumed, Health: h}, nil
		}
		if !errors.Is(err, sandbox.ErrNotFound) {
			return nil, classify(ctx, CodeCreationFailed, err)
		}
	}
	sb, err := Create(ctx, c, p)
	if err != nil {
		return nil, err
	}
	return &Acquired{Sandbox: sb, Decision: Created, Health: h}, nil
}
