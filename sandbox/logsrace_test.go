package sandbox_test

// Hosted Vercel's logs can answer 404 for a moment after a command ends,
// racing its cleanup (getsentry/junior#992). The fake does the same for a
// minute of its own clock (local.WithLogsRace); the client asks again.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// newRaceEnv starts a hosted fake whose logs race cleanup for a minute;
// onReattach runs before each re-attachment of the client.
func newRaceEnv(t *testing.T, onReattach func(*authtest.Clock, sandbox.ReattachEvent)) *env {
	t.Helper()
	clock := authtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEnv(t, local.WithClock(clock.Now), local.WithLogsRace(time.Minute))
	e.c = e.srv.Client(sandbox.WithReattachPolicy(sandbox.ReattachPolicy{OnReattach: func(ev sandbox.ReattachEvent) {
		onReattach(clock, ev)
	}}))
	return e
}

func TestLogsRacingCleanupAreAskedAgain(t *testing.T) {
	t.Parallel()
	var causes []error
	e := newRaceEnv(t, func(clock *authtest.Clock, ev sandbox.ReattachEvent) {
		causes = append(causes, ev.Err)
		clock.Advance(2 * time.Minute) // the cleanup race is over
	})
	sb := e.create("")
	h, err := sb.Command("echo", "hello").Start(t.Context())
	require.NoError(t, err)
	res, err := h.Wait(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode())

	stdout, err := h.Output(t.Context())
	require.NoError(t, err, "a 404 on the logs of a finished command is the race, not a missing command")
	assert.Equal(t, "hello\n", string(stdout), "every byte, once")
	require.Len(t, causes, 1)
	assert.ErrorIs(t, causes[0], sandbox.ErrNotFound, "the re-attachment names the 404")
}

func TestLogsLostToCleanupAreATypedError(t *testing.T) {
	t.Parallel()
	attempts := 0
	e := newRaceEnv(t, func(*authtest.Clock, sandbox.ReattachEvent) { attempts++ })
	sb := e.create("")
	cmd := sb.Command("echo", "hello")
	cmd.CaptureLimit = -1 // Wait only waits: the logs are read by Output
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)
	_, err = h.Wait(t.Context())
	require.NoError(t, err)

	stdout, err := h.Output(t.Context())
	assert.Empty(t, stdout, "no invented bytes")
	require.ErrorIs(t, err, sandbox.ErrOutputLost, "lost output is said, not hidden")
	var lost *sandbox.OutputLostError
	require.ErrorAs(t, err, &lost)
	assert.Equal(t, 0, lost.ExitCode)
	assert.Zero(t, lost.Delivered)
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	assert.Equal(t, 4, attempts, "a bounded grace, no loop")
}

func TestLogsOfAMissingCommandAreNotRetried(t *testing.T) {
	t.Parallel()
	e := newRaceEnv(t, func(*authtest.Clock, sandbox.ReattachEvent) { t.Error("re-attached to a command that does not exist") })
	sb := e.create("")
	other, err := sb.Attach("cmd_missing")
	require.NoError(t, err)
	_, err = other.Output(t.Context())
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestLogsNeverRaceWhenFriendly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithLogsRace(time.Hour), local.WithFriendly())
	sb := e.create("")
	out, err := sb.Command("echo", "hello").Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(out))
}
