package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// DefaultStopTimeout bounds the stop a Runner or Task does at the end.
const DefaultStopTimeout = 30 * time.Second

// Runner runs jobs: create a sandbox (retried as the client's RetryPolicy
// says, see sandbox.Client.Create), run the setup steps,
// execute, and always stop the sandbox. It is safe for concurrent use.
type Runner struct {
	Client *sandbox.Client
	// Observer receives every phase; nil reports nothing.
	Observer Observer
	// StopTimeout bounds the final stop, which runs on a context detached
	// from the caller's so that it happens after cancellation too; 0 means
	// DefaultStopTimeout.
	StopTimeout time.Duration
}

// Step is a named setup step run against a fresh sandbox.
type Step struct {
	Name string
	Run  func(ctx context.Context, sb *sandbox.Sandbox) error
}

// WriteFilesStep returns a step that uploads entries.
func WriteFilesStep(name string, entries ...files.Entry) Step {
	return Step{Name: name, Run: func(ctx context.Context, sb *sandbox.Sandbox) error {
		return sb.FS().WriteFiles(ctx, entries, files.WriteParams{})
	}}
}

// CommandStep returns a step that runs a command like cmd attached; a
// non-zero exit code fails the step. The command is killed when the step's
// context ends. cmd only describes the command, which runs each time the
// step does: it need not come from Command, and its DetachOnCancel is
// ignored.
func CommandStep(name string, cmd *command.Cmd) Step {
	return Step{Name: name, Run: func(ctx context.Context, sb *sandbox.Sandbox) error {
		_, err := commandLike(sb, cmd).Run(ctx)
		return err
	}}
}

// commandLike returns a command of sb with the fields of cmd, killed when
// its context ends.
func commandLike(sb *sandbox.Sandbox, cmd *command.Cmd) *command.Cmd {
	c := sb.Command(cmd.Name, cmd.Args...)
	c.Env, c.Dir, c.Sudo = cmd.Env, cmd.Dir, cmd.Sudo
	c.Timeout, c.InactivityTimeout = cmd.Timeout, cmd.InactivityTimeout
	c.Stdout, c.Stderr, c.CaptureLimit = cmd.Stdout, cmd.Stderr, cmd.CaptureLimit
	return c
}

// Job is one unit of work for a Runner.
type Job struct {
	// Sandbox describes the sandbox to create. An empty Name gets a random
	// one (see sandbox.Client.Create).
	Sandbox sandbox.CreateParams
	// Timeout bounds the whole job, from create to the end of Execute;
	// 0 means only ctx bounds it. When it passes, the running command is
	// killed (unless it set DetachOnCancel; CommandStep's never do),
	// the sandbox is stopped and the error has CodeTimeout.
	Timeout time.Duration
	// Setup runs in order before Execute; a failure ends the job with
	// CodeSetupFailed.
	Setup []Step
	// Name names the execute phase in events ("agent").
	Name string
	// Execute does the work. It may return the token usage it observed
	// (nil when unknown). A failure that is not already an *Error gets
	// CodeExecutionFailed.
	Execute func(ctx context.Context, sb *sandbox.Sandbox) (*Usage, error)
}

// Report says what a job did, whether it succeeded or not.
type Report struct {
	SandboxName string
	SessionID   string
	// Phases lists every phase that ended, in order.
	Phases []PhaseEvent
	// Usage is what Execute reported.
	Usage *Usage
	// Stopped is true when the sandbox was stopped at the end (or had
	// already stopped); StopErr says why not otherwise.
	Stopped bool
	StopErr error
}

// Run runs job. It returns a report in every case, and an *Error when the
// job failed. The sandbox, once created, is stopped before Run returns, also
// when ctx was cancelled, the job timed out, or a step panicked (the panic
// then continues after the stop). A failed stop does not fail the job: it is
// reported in Report.StopErr and to the Observer (CodeStopFailed).
func (r *Runner) Run(ctx context.Context, job Job) (*Report, error) {
	rep := &Report{}
	if r == nil || r.Client == nil {
		return rep, &Error{Code: CodeInvalidInput, Message: "no sandbox client given"}
	}
	if job.Execute == nil {
		return rep, &Error{Code: CodeInvalidInput, Message: "no Execute function given"}
	}
	runCtx := ctx
	if job.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, job.Timeout)
		defer cancel()
	}

	t := begin(runCtx, r.Observer, PhaseEvent{Phase: PhaseCreate, SandboxName: job.Sandbox.Name})
	sb, err := Create(runCtx, r.Client, job.Sandbox)
	if sb != nil {
		t.ev.SandboxName, t.ev.SessionID = sb.Name(), sb.SessionID()
		rep.SandboxName, rep.SessionID = sb.Name(), sb.SessionID()
	}
	rep.Phases = append(rep.Phases, t.end(runCtx, err))
	if err != nil {
		return rep, err
	}
	defer r.stop(ctx, sb, rep)

	for _, st := range job.Setup {
		t := begin(runCtx, r.Observer, PhaseEvent{Phase: PhaseSetup, Step: st.Name, SandboxName: sb.Name(), SessionID: sb.SessionID()})
		err := st.Run(runCtx, sb)
		if err != nil {
			err = classify(runCtx, CodeSetupFailed, fmt.Errorf("setup step %q: %w", st.Name, err))
		}
		rep.Phases = append(rep.Phases, t.end(runCtx, err))
		if err != nil {
			return rep, err
		}
	}

	t = begin(runCtx, r.Observer, PhaseEvent{Phase: PhaseExecute, Step: job.Name, SandboxName: sb.Name(), SessionID: sb.SessionID()})
	usage, err := r.execute(runCtx, t, job, sb)
	err = classify(runCtx, CodeExecutionFailed, err)
	t.ev.Usage = usage
	rep.Usage = usage
	rep.Phases = append(rep.Phases, t.end(runCtx, err))
	return rep, err
}

// execute calls job.Execute; a panic is reported to the observer as a
// failed execute phase and then continues (the deferred stop still runs).
func (r *Runner) execute(ctx context.Context, t *tracker, job Job, sb *sandbox.Sandbox) (*Usage, error) {
	defer func() {
		if p := recover(); p != nil {
			t.end(ctx, newError(CodeExecutionFailed, fmt.Errorf("panic: %v", p)))
			panic(p)
		}
	}()
	return job.Execute(ctx, sb)
}

func (r *Runner) stop(ctx context.Context, sb *sandbox.Sandbox, rep *Report) {
	rep.Stopped, rep.StopErr = stopSandbox(ctx, sb, r.StopTimeout, r.Observer, func(ev PhaseEvent) {
		rep.Phases = append(rep.Phases, ev)
	})
}

// stopSandbox stops sb on a context detached from ctx (so it runs after
// cancellation too) and bounded by timeout.
func stopSandbox(ctx context.Context, sb *sandbox.Sandbox, timeout time.Duration, obs Observer, record func(PhaseEvent)) (bool, error) {
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	t := begin(sctx, obs, PhaseEvent{Phase: PhaseStop, SandboxName: sb.Name(), SessionID: sb.SessionID()})
	_, err := sb.Stop(sctx)
	if err != nil && errors.Is(err, sandbox.ErrNotFound) {
		err = nil // nothing left to stop
	}
	if err != nil {
		err = newError(CodeStopFailed, err)
	}
	ev := t.end(sctx, err)
	if record != nil {
		record(ev)
	}
	return err == nil, err
}
