package sandbox_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// Start then Wait honours the fields Run honours: the writers get the
// output as it comes, the result captures it up to CaptureLimit.
func TestStartWaitHonoursWritersAndCaptureLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("build", sandboxtest.Steps{}.Stdout("0123456789abcdef\n").Stderr("warn\n").Await(gate).Stdout("done\n").Exit(2))
	sb := e.create("startwait")

	var stdout, stderr bytes.Buffer
	cmd := sb.Command("build")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.CaptureLimit = 10
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)
	close(gate)
	res, err := h.Wait(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Same(t, res, ee.Result)
	assert.Equal(t, 2, res.ExitCode())
	assert.Equal(t, "0123456789abcdef\ndone\n", stdout.String(), "the writer gets everything")
	assert.Equal(t, "warn\n", stderr.String())
	assert.Equal(t, "0123456789", string(res.Stdout), "the result keeps CaptureLimit bytes")
	assert.True(t, res.StdoutTruncated)
	assert.Equal(t, int64(22), res.StdoutBytes)
	assert.Equal(t, "warn\n", string(res.Stderr))
	assert.Equal(t, h.ID(), res.CommandID)

	_, err = h.Wait(t.Context())
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput, "the output went to the writers once: Wait is called once")
	assert.Equal(t, 1, e.srv.CommandCount())
}

// Start then Wait ends a silent command after InactivityTimeout, as Run
// does: the command is killed and the output so far kept.
func TestStartWaitHonoursInactivityTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("agent", sandboxtest.Steps{}.Stdout("thinking\n").Block())
	sb := e.create("startidle")

	cmd := sb.Command("agent")
	cmd.InactivityTimeout = 300 * time.Millisecond
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)
	res, err := h.Wait(ctxTimeout(t, 30*time.Second))
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie)
	assert.True(t, ie.Killed)
	assert.Equal(t, h.ID(), ie.CommandID)
	require.NotNil(t, res)
	assert.Equal(t, "thinking\n", string(res.Stdout))
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.Equal(t, []int{9}, e.srv.Commands()[0].Signals)
}

// Cancelling the context of Wait kills the command, as cancelling Run's
// does, unless DetachOnCancel is set; Start's context governs only the
// start.
func TestStartWaitCancel(t *testing.T) {
	t.Parallel()
	for _, detach := range []bool{false, true} {
		t.Run(map[bool]string{false: "Kills", true: "Detaches"}[detach], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.handle("serve", sandboxtest.Steps{}.Stdout("listening\n").Block())
			sb := e.create("")
			out := newChunks()
			cmd := sb.Command("serve")
			cmd.Stdout = out.writer("stdout")
			cmd.DetachOnCancel = detach

			sctx, scancel := context.WithCancel(t.Context())
			h, err := cmd.Start(sctx)
			require.NoError(t, err)
			scancel() // ends nothing: the command is started

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-out.first
				cancel()
			}()
			res, err := h.Wait(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.NotNil(t, res, "the output so far travels with the error")
			assert.Equal(t, "listening\n", string(res.Stdout))

			info, err := h.Info(t.Context())
			require.NoError(t, err)
			if detach {
				assert.False(t, info.Done(), "the command still runs")
				assert.Empty(t, requests(e.srv, http.MethodPost, "/cmd/"+h.ID()+"/kill"))
				require.NoError(t, h.Kill(t.Context()))
				return
			}
			// The kill is sent before Wait returns; the command's end is
			// recorded a moment later.
			require.Eventually(t, func() bool {
				info, err = h.Info(t.Context())
				return err == nil && info.Done()
			}, 10*time.Second, 5*time.Millisecond, "the command was killed")
			assert.Equal(t, 137, *info.ExitCode)
			assert.Equal(t, []int{9}, e.srv.Commands()[0].Signals)
		})
	}
}

// A command killed by its own Timeout says so, by Run and by Start then
// Wait; one killed otherwise does not.
func TestTimeoutKillIsReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("hang", sandboxtest.Steps{}.Block())
	sb := e.create("timedout")

	cmd := sb.Command("hang")
	cmd.Timeout = 200 * time.Millisecond
	res, err := cmd.Run(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.True(t, res.TimedOut)
	assert.Equal(t, 137, res.ExitCode())
	assert.Contains(t, err.Error(), "killed by its timeout")

	cmd = sb.Command("hang")
	cmd.Timeout = 200 * time.Millisecond
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)
	res, err = h.Wait(t.Context())
	require.ErrorAs(t, err, &ee)
	assert.True(t, res.TimedOut, "Start then Wait reports it too")

	cmd = sb.Command("hang")
	cmd.Timeout = time.Minute
	h, err = cmd.Start(t.Context())
	require.NoError(t, err)
	require.NoError(t, h.Kill(t.Context()))
	res, err = h.Wait(t.Context())
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 137, res.ExitCode())
	assert.False(t, res.TimedOut, "killed by Kill, long before its timeout")
}

// A Cmd runs once, as an exec.Cmd does.
func TestCmdRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("once")
	for name, again := range map[string]func(*command.Cmd, context.Context) error{
		"Run":            func(c *command.Cmd, ctx context.Context) error { _, err := c.Run(ctx); return err },
		"Output":         func(c *command.Cmd, ctx context.Context) error { _, err := c.Output(ctx); return err },
		"CombinedOutput": func(c *command.Cmd, ctx context.Context) error { _, err := c.CombinedOutput(ctx); return err },
		"Start":          func(c *command.Cmd, ctx context.Context) error { _, err := c.Start(ctx); return err },
	} {
		cmd := sb.Command("true")
		require.NoError(t, again(cmd, t.Context()), name)
		err := again(cmd, t.Context())
		var ie *sandbox.InputError
		require.ErrorAs(t, err, &ie, name)
		assert.Equal(t, "Cmd", ie.Field, name)
	}
	assert.Equal(t, 4, e.srv.CommandCount(), "no Cmd ran twice")
}
