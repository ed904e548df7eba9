package workload_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestRunnerSuccess(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{Stdout: "added 1 package\n"})
	srv.Script().Handle(sandboxtest.MatchName("node"), sandboxtest.Reply{Stdout: `{"text":"hi"}`})
	rec := newRecorder()
	r := &workload.Runner{Client: newClient(t, srv), Observer: rec}
	var out string
	rep, err := r.Run(context.Background(), workload.Job{
		Sandbox: sandbox.CreateParams{Runtime: "node24", VCPUs: 4, Timeout: 10 * time.Minute},
		Setup: []workload.Step{
			workload.CommandStep("npm install", &command.Cmd{Name: "npm", Args: []string{"install", "left-pad"}}),
			workload.WriteFilesStep("write agent", files.FromBytes("agent.mjs", []byte("console.log(1)"))),
		},
		Name: "agent",
		Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error) {
			b, err := sb.Command("node", "agent.mjs").Output(ctx)
			out = string(b)
			return &workload.Usage{InputTokens: 10, OutputTokens: 5}, err
		},
	})
	require.NoError(t, err)
	assert.Equal(t, `{"text":"hi"}`, out)
	assert.Equal(t, []string{"create=ok", "setup:npm install=ok", "setup:write agent=ok", "execute:agent=ok", "stop=ok"}, phases(rep.Phases))
	assert.Equal(t, phases(rep.Phases), phases(rec.ended()), "the observer saw the same phases")
	assert.Len(t, rec.starts, 5)
	assert.True(t, rep.Stopped)
	assert.Equal(t, 15, rep.Usage.Total())
	assert.Equal(t, 0, runningSessions(srv))
	sess, ok := srv.Session(rep.SessionID)
	require.True(t, ok)
	assert.Equal(t, 4, sess.VCPUs)
	assert.Equal(t, 10*time.Minute, sess.Timeout)
}

func TestRunnerFailuresStopTheSandbox(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name   string
		setup  []workload.Step
		exec   func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error)
		code   workload.ErrorCode
		phases []string
	}{
		{
			name:   "setup command fails",
			setup:  []workload.Step{workload.CommandStep("npm install", &command.Cmd{Name: "npm", Args: []string{"install"}})},
			code:   workload.CodeSetupFailed,
			phases: []string{"create=ok", "setup:npm install=SANDBOX_SETUP_FAILED", "stop=ok"},
		},
		{
			name:   "execute fails",
			exec:   func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) { return nil, boom },
			code:   workload.CodeExecutionFailed,
			phases: []string{"create=ok", "execute=AGENT_EXECUTION_FAILED", "stop=ok"},
		},
		{
			name: "execute keeps its own code",
			exec: func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) {
				return nil, &workload.Error{Code: workload.CodeInactive, Err: boom}
			},
			code:   workload.CodeInactive,
			phases: []string{"create=ok", "execute=AGENT_INACTIVE", "stop=ok"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := sandboxtest.NewServer(t)
			srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{Stderr: "npm ERR! 404\n", ExitCode: 1})
			exec := c.exec
			if exec == nil {
				exec = func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) { return nil, nil }
			}
			r := &workload.Runner{Client: newClient(t, srv)}
			rep, err := r.Run(context.Background(), workload.Job{Setup: c.setup, Execute: exec})
			require.Error(t, err)
			assert.Equal(t, c.code, workload.ErrorCodeOf(err), "%v", err)
			assert.Equal(t, c.phases, phases(rep.Phases))
			assert.True(t, rep.Stopped)
			assert.Equal(t, 0, runningSessions(srv))
		})
	}
}

func TestRunnerCreationFailure(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	f := &faults{status: http.StatusServiceUnavailable}
	f.n.Store(10)
	called := false
	r := &workload.Runner{Client: newClient(t, srv, f.middleware)}
	rep, err := r.Run(context.Background(), workload.Job{Execute: func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) {
		called = true
		return nil, nil
	}})
	assert.ErrorIs(t, err, workload.ErrCreationFailed)
	assert.False(t, called)
	require.Len(t, rep.Phases, 1)
	assert.Equal(t, int32(3), f.sent.Load(), "the client's three attempts")
	assert.Equal(t, "SANDBOX_CREATION_FAILED", rep.Phases[0].Outcome())
}

func TestRunnerTimeoutKillsAndStops(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("agent"), sandboxtest.Steps{}.Stdout("thinking\n").Block())
	r := &workload.Runner{Client: newClient(t, srv)}
	rep, err := r.Run(context.Background(), workload.Job{
		Timeout: 500 * time.Millisecond,
		Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error) {
			_, err := sb.Command("agent").Run(ctx)
			return nil, err
		},
	})
	assert.ErrorIs(t, err, workload.ErrTimeout)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, rep.Stopped)
	cmds := srv.Commands()
	require.Len(t, cmds, 1)
	assert.NotNil(t, cmds[0].Command.ExitCode, "the command was killed")
	assert.Equal(t, 0, runningSessions(srv))
}

func TestRunnerCancelledStillStops(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &workload.Runner{Client: newClient(t, srv)}
	rep, err := r.Run(ctx, workload.Job{Execute: func(ctx context.Context, sb *sandbox.Sandbox) (*workload.Usage, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	assert.ErrorIs(t, err, workload.ErrCancelled)
	assert.True(t, rep.Stopped, "stopped on a fresh context")
	assert.Equal(t, 0, runningSessions(srv))
}

func TestRunnerPanicStillStops(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	rec := newRecorder()
	r := &workload.Runner{Client: newClient(t, srv), Observer: rec}
	assert.PanicsWithValue(t, "bug", func() {
		_, _ = r.Run(context.Background(), workload.Job{Execute: func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) {
			panic("bug")
		}})
	})
	require.Len(t, srv.Sessions(), 1)
	assert.Equal(t, 0, runningSessions(srv))
	assert.Equal(t, []string{"create=ok", "execute=AGENT_EXECUTION_FAILED", "stop=ok"}, phases(rec.ended()))
}

func TestRunnerStopFailureIsReported(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	failStop := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		if isStop(req) {
			return respond(req, http.StatusForbidden, ""), nil
		}
		return next(req)
	}
	r := &workload.Runner{Client: newClient(t, srv, failStop)}
	rep, err := r.Run(context.Background(), workload.Job{Execute: func(context.Context, *sandbox.Sandbox) (*workload.Usage, error) {
		return nil, nil
	}})
	require.NoError(t, err, "the work succeeded")
	assert.False(t, rep.Stopped)
	assert.ErrorIs(t, rep.StopErr, workload.ErrStopFailed)
	assert.Equal(t, "stop=SANDBOX_STOP_FAILED", phases(rep.Phases)[2])
}

func TestRunnerInvalid(t *testing.T) {
	_, err := (&workload.Runner{}).Run(context.Background(), workload.Job{})
	assert.ErrorIs(t, err, workload.ErrInvalidInput)
}

func TestLogObserver(t *testing.T) {
	var buf bytes.Buffer
	obs := workload.LogObserver(slog.New(slog.NewTextHandler(&buf, nil)))
	obs.PhaseEnd(context.Background(), workload.PhaseEvent{Phase: workload.PhaseExecute, Step: "agent", Duration: time.Second,
		Usage: &workload.Usage{InputTokens: 3, OutputTokens: 4}})
	obs.PhaseEnd(context.Background(), workload.PhaseEvent{Phase: workload.PhaseCreate,
		Err: workload.ErrCreationFailed, Code: workload.CodeCreationFailed})
	s := buf.String()
	assert.Contains(t, s, "phase=execute step=agent duration=1s outcome=ok input_tokens=3 output_tokens=4")
	assert.Contains(t, s, "level=WARN")
	assert.Contains(t, s, "outcome=SANDBOX_CREATION_FAILED")
}
