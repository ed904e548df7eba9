package workload_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestStopTaskOutcomes(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	ctx := context.Background()
	sb, err := newClient(t, srv).Create(ctx, sandbox.CreateParams{Name: "task-1"})
	require.NoError(t, err)
	ref := workload.RefOf(sb)

	// Another process: a new client knowing only the stored ref.
	other := newClient(t, srv)
	out, err := workload.StopTask(ctx, other, workload.TaskRef{SessionID: ref.SessionID})
	require.NoError(t, err)
	assert.Equal(t, workload.Stopped, out)
	out, err = workload.StopTask(ctx, other, workload.TaskRef{SessionID: ref.SessionID})
	require.NoError(t, err)
	assert.Equal(t, workload.AlreadyStopped, out)
	out, err = workload.StopTask(ctx, other, workload.TaskRef{SandboxName: ref.SandboxName})
	require.NoError(t, err)
	assert.Equal(t, workload.AlreadyStopped, out)
	out, err = workload.StopTask(ctx, other, workload.TaskRef{SandboxName: "never-existed"})
	require.NoError(t, err)
	assert.Equal(t, workload.NothingToStop, out)
	out, err = workload.StopTask(ctx, other, workload.TaskRef{SessionID: "sbx_doesnotexist"})
	require.NoError(t, err)
	assert.Equal(t, workload.NothingToStop, out)
	_, err = workload.StopTask(ctx, other, workload.TaskRef{})
	assert.ErrorIs(t, err, workload.ErrInvalidInput)

	sb2, err := newClient(t, srv).Create(ctx, sandbox.CreateParams{Name: "task-2"})
	require.NoError(t, err)
	out, err = workload.StopTask(ctx, other, workload.TaskRef{SandboxName: sb2.Name()})
	require.NoError(t, err)
	assert.Equal(t, workload.Stopped, out)
	assert.Equal(t, 0, runningSessions(srv))
}

func TestStopTaskGone(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	gone := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		if isStop(req) {
			return respond(req, http.StatusGone, ""), nil
		}
		return next(req)
	}
	sid := newTaskSandbox(t, srv).SessionID()
	out, err := workload.StopTask(context.Background(), newClient(t, srv, gone), workload.TaskRef{SessionID: sid})
	require.NoError(t, err)
	assert.Equal(t, workload.AlreadyStopped, out)

	failing := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		return respond(req, http.StatusForbidden, ""), nil
	}
	_, err = workload.StopTask(context.Background(), newClient(t, srv, failing), workload.TaskRef{SessionID: sid})
	assert.ErrorIs(t, err, workload.ErrStopFailed)
}

func newTaskSandbox(t *testing.T, srv *sandboxtest.Server) *sandbox.Sandbox {
	t.Helper()
	sb, err := newClient(t, srv).Create(context.Background(), sandbox.CreateParams{})
	require.NoError(t, err)
	return sb
}

func TestTaskStopRequestEndsWorkQuickly(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("agent"), sandboxtest.Steps{}.Stdout("step 1\n").Block())
	var requestedAt atomic.Int64
	task := workload.NewTask(newTaskSandbox(t, srv), workload.TaskOptions{
		PollInterval: 50 * time.Millisecond,
		StopRequested: func(context.Context) (bool, error) {
			return requestedAt.Load() != 0, nil
		},
	})
	time.AfterFunc(300*time.Millisecond, func() { requestedAt.Store(time.Now().UnixNano()) })
	_, err := task.Run(context.Background(), &command.Cmd{Name: "agent"})
	ended := time.Now()
	assert.ErrorIs(t, err, workload.ErrStopped)
	require.NotZero(t, requestedAt.Load())
	assert.Less(t, ended.Sub(time.Unix(0, requestedAt.Load())), 2*time.Second)
	cmds := srv.Commands()
	require.Len(t, cmds, 1)
	assert.NotNil(t, cmds[0].Command.ExitCode, "the command was killed")
	assert.Contains(t, cmds[0].Signals, 9)
	assert.Equal(t, 0, runningSessions(srv), "the sandbox was stopped")

	// No later step may run.
	ran := false
	err = task.Do(context.Background(), "next", func(context.Context, *sandbox.Sandbox) error { ran = true; return nil })
	assert.ErrorIs(t, err, workload.ErrTaskEnded)
	assert.ErrorIs(t, err, workload.ErrStopped, "it says why")
	assert.False(t, ran)
	assert.Equal(t, 1, srv.CommandCount())
}

func TestTaskInactivity(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("agent"), sandboxtest.Steps{}.Stdout("hello\n").Block())
	task := workload.NewTask(newTaskSandbox(t, srv), workload.TaskOptions{InactivityTimeout: 200 * time.Millisecond})
	_, err := task.Run(context.Background(), &command.Cmd{Name: "agent"})
	assert.ErrorIs(t, err, workload.ErrInactive)
	assert.ErrorIs(t, err, command.ErrInactivity)
	assert.ErrorIs(t, task.Err(), workload.ErrInactive)
	_, err = task.Run(context.Background(), &command.Cmd{Name: "agent"})
	assert.ErrorIs(t, err, workload.ErrTaskEnded)
	assert.Equal(t, 1, srv.CommandCount())
	assert.Equal(t, 0, runningSessions(srv))
}

func TestTaskDeadline(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("long"), sandboxtest.Steps{}.Stdout("x\n").Sleep(time.Hour))
	srv.Script().Handle(sandboxtest.MatchName("follow-up"), sandboxtest.Reply{Stdout: "must not run\n"})
	task := workload.NewTask(newTaskSandbox(t, srv), workload.TaskOptions{Deadline: time.Now().Add(400 * time.Millisecond)})
	start := time.Now()
	_, err := task.Run(context.Background(), &command.Cmd{Name: "long"})
	assert.ErrorIs(t, err, workload.ErrTimeout)
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = task.Run(context.Background(), &command.Cmd{Name: "follow-up"})
	assert.ErrorIs(t, err, workload.ErrTaskEnded)
	assert.ErrorIs(t, err, workload.ErrTimeout)
	for _, c := range srv.Script().Calls() {
		assert.NotEqual(t, "follow-up", c.Name, "no step ran after the deadline")
	}
	assert.Equal(t, 0, runningSessions(srv))
}

func TestTaskDeadlineAlreadyPassed(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	task := workload.NewTask(newTaskSandbox(t, srv), workload.TaskOptions{Deadline: time.Now().Add(-time.Second)})
	ran := false
	err := task.Do(context.Background(), "step", func(context.Context, *sandbox.Sandbox) error { ran = true; return nil })
	assert.ErrorIs(t, err, workload.ErrTaskEnded)
	assert.False(t, ran)
	assert.Equal(t, 0, runningSessions(srv), "the sandbox was stopped")
}

func TestTaskStepErrorKeepsTaskOpen(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("false"), sandboxtest.Reply{ExitCode: 1})
	srv.Script().Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	task := workload.NewTask(newTaskSandbox(t, srv), workload.TaskOptions{})
	_, err := task.Run(context.Background(), &command.Cmd{Name: "false"})
	var exitErr *command.ExitError
	assert.ErrorAs(t, err, &exitErr)
	assert.NoError(t, task.Err())
	_, err = task.Run(context.Background(), &command.Cmd{Name: "true"})
	assert.NoError(t, err)
	assert.Equal(t, 2, task.Steps())
	assert.ErrorIs(t, task.End(context.Background()), workload.ErrStopped)
	assert.NoError(t, task.StopErr())
	assert.Equal(t, 0, runningSessions(srv))
}

func TestAcquire(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	c := newClient(t, srv)
	ctx := context.Background()
	p := sandbox.CreateParams{Name: "keepalive"}

	a, err := workload.Acquire(ctx, c, p, sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, workload.Created, a.Decision)
	first := a.Sandbox.SessionID()

	a, err = workload.Acquire(ctx, c, p, sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, workload.Reused, a.Decision)
	assert.Equal(t, first, a.Sandbox.SessionID())
	assert.Equal(t, sandbox.Healthy, a.Health.State)

	require.NoError(t, srv.ExpireSession(first)) // now 410
	a, err = workload.Acquire(ctx, c, p, sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, workload.Resumed, a.Decision)
	assert.Equal(t, sandbox.Stopped, a.Health.State)
	assert.NotEqual(t, first, a.Sandbox.SessionID())
	assert.Len(t, srv.Sandboxes(), 1)

	_, err = workload.Acquire(ctx, c, sandbox.CreateParams{}, sandbox.HealthParams{})
	assert.ErrorIs(t, err, workload.ErrInvalidInput)
}

func TestTaskStoppedByAnotherProcessBeforePoll(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("agent"), sandboxtest.Steps{}.Stdout("working\n").Block())
	var flag atomic.Bool
	sb := newTaskSandbox(t, srv)
	task := workload.NewTask(sb, workload.TaskOptions{
		PollInterval:  time.Hour, // the poll never notices: the stop itself ends the step
		StopRequested: func(context.Context) (bool, error) { return flag.Load(), nil },
	})
	time.AfterFunc(200*time.Millisecond, func() {
		flag.Store(true)
		_, _ = workload.StopTask(context.Background(), newClient(t, srv), workload.RefOf(sb))
	})
	start := time.Now()
	_, err := task.Run(context.Background(), &command.Cmd{Name: "agent"})
	assert.ErrorIs(t, err, workload.ErrStopped)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.ErrorIs(t, task.Do(context.Background(), "next", func(context.Context, *sandbox.Sandbox) error { return nil }), workload.ErrTaskEnded)
}
