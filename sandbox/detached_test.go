package sandbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestStartWaitOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("job", sandboxtest.Steps{}.Stdout("out 1\n").Stderr("err 1\n").Await(gate).Stdout("out 2\n").Exit(4))
	sb := e.create("detached")

	h, err := sb.Command("job", "--fast").Start(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, h.ID())
	assert.Equal(t, sb.SessionID(), h.SessionID())
	assert.Equal(t, "job", h.Started().Name)
	assert.Equal(t, []string{"--fast"}, h.Started().Args)
	assert.False(t, h.Started().Done(), "Start returns while the command runs")
	info, err := h.Info(t.Context())
	require.NoError(t, err)
	assert.False(t, info.Done())

	close(gate)
	res, err := h.Wait(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 4, ee.ExitCode())
	assert.Equal(t, 4, res.ExitCode())
	assert.Equal(t, h.ID(), res.CommandID)
	assert.Equal(t, "out 1\nout 2\n", string(res.Stdout), "Wait captures the output, as Run does")
	assert.Equal(t, "err 1\n", string(res.Stderr))

	stdout, err := h.Output(t.Context())
	require.ErrorAs(t, err, &ee, "Output reports the exit code, as Cmd.Output does")
	assert.Equal(t, "out 1\nout 2\n", string(stdout))
	assert.Equal(t, "err 1\n", string(ee.Stderr))
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestLogsReplayFromTheStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", sandboxtest.Steps{}.Stdout("a").Stderr("b").Stdout("c"))
	sb := e.create("logs")
	h, err := sb.Command("job").Start(t.Context())
	require.NoError(t, err)
	_, err = h.Wait(t.Context())
	require.NoError(t, err)

	// Replayed twice, whole each time, after the command finished.
	for range 2 {
		var got []command.Event
		for ev, err := range h.Logs(t.Context()) {
			require.NoError(t, err)
			got = append(got, command.Event{Stream: ev.Stream, Data: bytes.Clone(ev.Data)}) // valid until the next event
		}
		assert.Equal(t, []command.Event{
			{Stream: command.Stdout, Data: []byte("a")},
			{Stream: command.Stderr, Data: []byte("b")},
			{Stream: command.Stdout, Data: []byte("c")},
		}, got)
	}
}

func TestLogsFollowARunningCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("job", sandboxtest.Steps{}.Stdout("early\n").Await(gate).Stdout("late\n"))
	sb := e.create("follow")
	h, err := sb.Command("job").Start(t.Context())
	require.NoError(t, err)

	var got []string
	for ev, err := range h.Logs(t.Context()) {
		require.NoError(t, err)
		got = append(got, string(ev.Data))
		if len(got) == 1 {
			// The first event arrived while the command was blocked.
			assert.False(t, commandDone(e.srv, h.ID()))
			close(gate)
		}
	}
	assert.Equal(t, []string{"early\n", "late\n"}, got)

	var out, errb bytes.Buffer
	require.NoError(t, h.CopyOutput(t.Context(), &out, &errb))
	assert.Equal(t, "early\nlate\n", out.String())
}

// Kill sends SIGKILL; Signal sends the signal it is given.
func TestKillAndSignal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("server", sandboxtest.Steps{}.Stdout("up\n").Block())
	sb := e.create("kill")
	for _, tc := range []struct {
		name   string
		send   func(h *command.Handle) error
		signal int
		code   int
	}{
		{"Kill", func(h *command.Handle) error { return h.Kill(t.Context()) }, 9, 137},
		{"Signal(SIGTERM)", func(h *command.Handle) error { return h.Signal(t.Context(), command.SIGTERM) }, 15, 143},
	} {
		h, err := sb.Command("server").Start(t.Context())
		require.NoError(t, err)
		require.NoError(t, tc.send(h), tc.name)
		res, err := h.Wait(t.Context())
		var ee *command.ExitError
		require.ErrorAs(t, err, &ee, tc.name)
		assert.Equal(t, tc.code, res.ExitCode(), "%s: 128 + the signal", tc.name)
		assert.False(t, res.TimedOut, tc.name)

		kills := requests(e.srv, http.MethodPost, "/cmd/"+h.ID()+"/kill")
		require.Len(t, kills, 1, tc.name)
		assert.Equal(t, map[string]any{"signal": float64(tc.signal)}, jsonBody(t, kills[0]), tc.name)
		assert.ErrorIs(t, h.Signal(t.Context(), -1), sandbox.ErrInvalidInput)
		assert.ErrorIs(t, h.Signal(t.Context(), 0), sandbox.ErrInvalidInput, "no default signal")
	}
}

func TestReattachFromAnotherClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("train", sandboxtest.Steps{}.Stdout("epoch 1\n").Await(gate).Stdout("epoch 2\n").Stderr("done\n"))
	sb := e.create("worker")
	h, err := sb.Command("train").Start(t.Context())
	require.NoError(t, err)

	// Stored as text by one process...
	stored := h.Ref().String()
	blob, err := json.Marshal(struct{ Ref command.Ref }{h.Ref()})
	require.NoError(t, err)

	// ...and picked up by another, with its own client.
	other := e.srv.Client()
	ref, err := command.ParseRef(stored)
	require.NoError(t, err)
	assert.Equal(t, command.Ref{SandboxName: "worker", SessionID: sb.SessionID(), CommandID: h.ID()}, ref)
	var decoded struct{ Ref command.Ref }
	require.NoError(t, json.Unmarshal(blob, &decoded))
	assert.Equal(t, ref, decoded.Ref)

	h2, err := other.Attach(ref)
	require.NoError(t, err)
	info, err := h2.Info(t.Context())
	require.NoError(t, err)
	assert.False(t, info.Done())
	close(gate)

	res, err := h2.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	stdout, err := h2.Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "epoch 1\nepoch 2\n", string(stdout))
	assert.Equal(t, 1, e.srv.CommandCount(), "no command ran twice")
	assert.Len(t, requests(e.srv, http.MethodPost, "/cmd"), 1)
}

func TestAttachUnknownCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("unknown")
	h, err := sb.Attach("cmd_doesnotexist")
	require.NoError(t, err, "Attach does no I/O")
	_, err = h.Wait(t.Context())
	assert.ErrorIs(t, err, sandbox.ErrNotFound)

	_, err = command.ParseRef("only-one-part")
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = e.c.Attach(command.Ref{SessionID: "s"})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

// Terminate sends SIGTERM, then SIGKILL to a command that ignores it.
func TestTerminateEscalates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("stubborn", sandboxtest.Steps{}.Stdout("up\n").Ignore(15).Block())
	e.handle("polite", sandboxtest.Steps{}.Block())
	sb := e.create("")
	for _, tc := range []struct {
		name  string
		grace time.Duration // the polite one ends long before its grace
		want  []int
	}{{"stubborn", 10 * time.Millisecond, []int{15, 9}}, {"polite", time.Minute, []int{15}}} {
		name, want := tc.name, tc.want
		h, err := sb.Command(name).Start(t.Context())
		require.NoError(t, err)
		require.NoError(t, h.Terminate(t.Context(), tc.grace), name)
		res, err := h.Wait(t.Context())
		require.Error(t, err, name)
		assert.NotZero(t, res.ExitCode(), name)
		for _, c := range e.srv.Commands() {
			if c.Command.ID == h.ID() {
				assert.Equal(t, want, c.Signals, name)
			}
		}
	}
}
