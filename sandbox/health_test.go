package sandbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestHealthHealthy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("ok")
	h, err := sb.Health(t.Context(), sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Healthy, h.State, h.Reason)
	assert.False(t, h.ShouldRecreate)
	assert.Positive(t, h.Latency)
	assert.Equal(t, sb.SessionID(), h.SessionID)
	assert.NoError(t, h.Err)
	cmds := e.srv.Commands()
	require.Len(t, cmds, 1)
	assert.Equal(t, "true", cmds[0].Command.Name)
	assert.Empty(t, resumeRequests(e.srv))
}

func TestHealthAfterStop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("stopped")
	sid := sb.SessionID()
	_, err := sb.Stop(t.Context())
	require.NoError(t, err)

	h, err := sb.Health(t.Context(), sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Stopped, h.State)
	assert.True(t, h.ShouldRecreate)
	assert.Equal(t, sid, h.SessionID)

	// By name, from another client: the sandbox reports a stopped session.
	h, err = e.srv.Client().Health(t.Context(), "stopped", sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Stopped, h.State)
	assert.True(t, h.ShouldRecreate)
	assert.Empty(t, resumeRequests(e.srv), "a probe never resumes")
	assert.Equal(t, sid, sb.SessionID())
}

func TestProbeUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h, err := e.c.Health(t.Context(), "nobody", sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.NotFound, h.State)
	assert.True(t, h.ShouldRecreate)
	assert.ErrorIs(t, h.Err, sandbox.ErrNotFound)

	h, err = e.c.SessionHealth(t.Context(), "sbx_nosuchsession", sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.NotFound, h.State)

	_, err = e.c.Health(t.Context(), "", sandbox.HealthParams{})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = e.c.SessionHealth(t.Context(), "", sandbox.HealthParams{})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = e.c.SessionHealth(t.Context(), "sbx/1", sandbox.HealthParams{})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = e.c.Health(t.Context(), "a", sandbox.HealthParams{Timeout: -1})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = e.c.Health(t.Context(), "a", sandbox.HealthParams{Command: []string{"ls", "\x00"}})
	var ie *sandbox.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "HealthParams.Command[1]", ie.Field)
}

func TestHealthHangingProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.script.Override(sandboxtest.MatchName("true"), sandboxtest.Steps{}.Block())
	sb := e.create("hung")

	const timeout = 200 * time.Millisecond
	h, err := sb.Health(ctxTimeout(t, time.Minute), sandbox.HealthParams{Timeout: timeout})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Unhealthy, h.State)
	assert.True(t, h.ShouldRecreate)
	assert.Contains(t, h.Reason, "no answer within")
	assert.GreaterOrEqual(t, h.Latency, timeout, "it waited for the deadline")
	assert.Less(t, h.Latency, timeout+10*time.Second, "and not much longer")
	assert.Equal(t, 1, e.srv.CommandCount())
}

func TestHealthFailingProbeCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("check", sandboxtest.Reply{Stderr: "db down\n", ExitCode: 2})
	sb := e.create("failing")
	h, err := sb.Health(t.Context(), sandbox.HealthParams{Command: []string{"check", "--db"}})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Unhealthy, h.State)
	assert.Contains(t, h.Reason, "exited with code 2")
	assert.True(t, h.ShouldRecreate)
	assert.Equal(t, []string{"--db"}, e.srv.Commands()[0].Command.Args)
}

func TestProbeBySessionFromAnotherClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("remote")
	other := e.srv.Client()
	h, err := other.SessionHealth(t.Context(), sb.SessionID(), sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Healthy, h.State, h.Reason)
	assert.Equal(t, sb.SessionID(), h.SessionID)

	h, err = other.Health(t.Context(), "remote", sandbox.HealthParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Healthy, h.State, h.Reason)
	assert.Equal(t, 2, e.srv.CommandCount())
}
