package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A run that ends before its command does keeps what it has, as os/exec
// keeps its buffers: the output captured so far and the ids to reattach
// with, beside the error, and an exit code of -1 (unknown), never an
// invented one.

// partial checks a partial result of the fake's only command.
func partial(t *testing.T, e *env, sb *sandbox.Sandbox, res *command.Result, stdout string) {
	t.Helper()
	require.NotNil(t, res, "the output so far travels with the error")
	assert.Equal(t, stdout, string(res.Stdout))
	assert.EqualValues(t, len(stdout), res.StdoutBytes)
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.False(t, res.Success())
	assert.Equal(t, e.srv.Commands()[0].Command.ID, res.CommandID, "enough to reattach")
	assert.Equal(t, sb.SessionID(), res.SessionID)
	assert.Equal(t, 1, e.srv.CommandCount())
}

// cancelOnOutput runs cmd with a context cancelled once its first output
// has been written.
func cancelOnOutput(t *testing.T, cmd *command.Cmd, run func(ctx context.Context) error) error {
	t.Helper()
	ch := newChunks()
	cmd.Stdout = ch.writer("stdout")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		select {
		case <-ch.first:
		case <-ctx.Done():
		}
		cancel()
	}()
	return run(ctx)
}

func TestRunCancelledKeepsPartialResult(t *testing.T) {
	t.Parallel()
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "Left", true: "Killed"}[kill], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.handle("serve", sandboxtest.Steps{}.Stdout("listening\n").Block())
			sb := e.create("")
			cmd := sb.Command("serve")
			cmd.DetachOnCancel = !kill
			var res *command.Result
			err := cancelOnOutput(t, cmd, func(ctx context.Context) (err error) {
				res, err = cmd.Run(ctx)
				return err
			})
			require.ErrorIs(t, err, context.Canceled)
			partial(t, e, sb, res, "listening\n")
		})
	}
}

func TestOutputCancelledKeepsPartialOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("serve", sandboxtest.Steps{}.Stdout("listening\n").Block())
	sb := e.create("")

	for name, call := range map[string]func(*command.Cmd, context.Context) ([]byte, error){
		"Output": (*command.Cmd).Output, "CombinedOutput": (*command.Cmd).CombinedOutput,
	} {
		var out []byte
		cmd := sb.Command("serve")
		err := cancelOnOutput(t, cmd, func(ctx context.Context) (err error) {
			out, err = call(cmd, ctx)
			return err
		})
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Equal(t, "listening\n", string(out), name)
	}
}

func TestRunInactivityKeepsPartialResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("agent", sandboxtest.Steps{}.Stdout("thinking\n").Block())
	sb := e.create("")
	cmd := sb.Command("agent")
	cmd.InactivityTimeout = 300 * time.Millisecond
	res, err := cmd.Run(ctxTimeout(t, 30*time.Second))
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie)
	partial(t, e, sb, res, "thinking\n")
	assert.Same(t, ie.Result, res)
}

func TestRunCutWithoutReattachKeepsPartialResult(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", jobSteps)
	sb, err := e.srv.Client(noReattach).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	// The command line and two output lines, then a clean end.
	e.srv.Inject(fault.Fault{Method: "POST", Path: cmdPattern, Cut: true, AfterFrames: 3})

	res, err := sb.Command("job").Run(t.Context())
	require.ErrorIs(t, err, sandbox.ErrStreamEnded)
	partial(t, e, sb, res, "one\ntwo\n")
}
