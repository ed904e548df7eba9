package sandbox_test

// Hosted Vercel may answer a stop or a snapshot before the session has
// stopped (local.WithEarlyStops): a stop with the session still stopping
// and a stale currentSnapshotId, a snapshot with 201 and the session
// still snapshotting.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

func TestWaitStoppedAfterAnEarlyStopAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithEarlyStops())
	sb := e.create("")
	before := sb.Info().CurrentSnapshotID

	res, err := sb.Stop(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopping, res.Session.Status, "answered while still stopping")
	assert.Nil(t, res.Snapshot)
	assert.Equal(t, before, sb.Info().CurrentSnapshotID, "the answer's snapshot id is stale")

	sess, err := sb.WaitStopped(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopped, sess.Status)
	cur := sb.Info().CurrentSnapshotID
	require.NotEmpty(t, cur, "the persistent stop's snapshot is current")
	assert.NotEqual(t, before, cur)
	snap, err := e.c.GetSnapshot(t.Context(), cur)
	require.NoError(t, err)
	assert.Equal(t, sb.SessionID(), snap.SourceSessionID)
}

func TestSnapshotAnsweredWhileSnapshotting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithEarlyStops())
	sb := e.create("")

	snap, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{})
	require.NoError(t, err)
	require.NotEmpty(t, snap.ID)
	assert.Equal(t, sandbox.StatusSnapshotting, sb.Session().Status, "201 while still snapshotting")

	sess, err := sb.WaitStopped(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopped, sess.Status)
	assert.Equal(t, snap.ID, sb.Info().CurrentSnapshotID)
}

func TestAutoResumeWaitsForASnapshottingSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithEarlyStops())
	sb := e.create("")
	old := sb.SessionID()
	_, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{})
	require.NoError(t, err)

	out, err := sb.Command("echo", "back").Output(t.Context())
	require.NoError(t, err, "the call waits for the stop, then resumes")
	assert.Equal(t, "back\n", string(out))
	assert.NotEqual(t, old, sb.SessionID(), "a new session")
}

func TestSnapshotAnswersWhenStoppedWhenFriendly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithEarlyStops(), local.WithFriendly())
	sb := e.create("")
	_, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{})
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopped, sb.Session().Status)
	res, err := sb.Stop(t.Context())
	require.NoError(t, err)
	assert.True(t, res.AlreadyStopped)
}
