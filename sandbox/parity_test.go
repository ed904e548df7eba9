package sandbox_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// The commands of a session are listed by session id, in the order they
// started, finished or not.
func TestListSessionCommands(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	sb := e.create("")
	_, err := sb.Command("echo", "one").Output(ctx)
	require.NoError(t, err)
	_, err = sb.Command("true").Output(ctx)
	require.NoError(t, err)

	var got []command.Info
	for info, err := range e.c.ListSessionCommands(ctx, sb.SessionID()) {
		require.NoError(t, err)
		got = append(got, info)
	}
	require.Len(t, got, 2)
	assert.Equal(t, "echo", got[0].Name)
	assert.Equal(t, []string{"one"}, got[0].Args)
	assert.Equal(t, sb.SessionID(), got[0].SessionID)
	require.True(t, got[0].Done())
	assert.Equal(t, 0, *got[0].ExitCode)
	assert.Equal(t, "true", got[1].Name)
	require.Len(t, requests(e.srv, "GET", "/v2/sandboxes/sessions/"+sb.SessionID()+"/cmd"), 1, "one request")

	var again []command.Info
	for info, err := range sb.Commands(ctx) {
		require.NoError(t, err)
		again = append(again, info)
	}
	assert.Equal(t, got, again)

	for _, err := range e.c.ListSessionCommands(ctx, "sbx_none") {
		require.ErrorIs(t, err, sandbox.ErrNotFound)
	}
	_, err = sb.Stop(ctx)
	require.NoError(t, err)
	for _, err := range sb.Commands(ctx) {
		require.ErrorIs(t, err, sandbox.ErrGone, "hosted Vercel forgets the commands of a stopped session")
	}
}

// UpdateParams.ClearNetworkID takes a sandbox out of its private network.
func TestUpdateClearsNetworkID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	sb := e.create("")
	require.NoError(t, sb.Update(ctx, sandbox.UpdateParams{NetworkID: "net_1"}))
	assert.Equal(t, "net_1", sb.Info().NetworkID)
	require.NoError(t, sb.Update(ctx, sandbox.UpdateParams{ClearNetworkID: true}))
	assert.Empty(t, sb.Info().NetworkID)
	require.NoError(t, sb.Refresh(ctx))
	assert.Empty(t, sb.Info().NetworkID, "the server took it out")
	err := sb.Update(ctx, sandbox.UpdateParams{NetworkID: "net_1", ClearNetworkID: true})
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

// The fields hosted Vercel sends beyond the API reference are decoded.
func TestHostedExtraFieldsAreDecoded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	sb := e.create("extra")
	assert.Equal(t, runtime.GOARCH, sb.Info().Architecture)
	assert.Equal(t, runtime.GOARCH, sb.Session().Architecture)
	assert.Equal(t, "extra", sb.Session().SourceSandboxName)
	snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
	require.NoError(t, err)
	assert.Equal(t, runtime.GOARCH, snap.Architecture)
}

// A backslash is part of a name: a\b.txt and a/b.txt are two files, and
// an upload read back (Walk, ReadFile) is the tree that was sent.
func TestUploadRoundTripKeepsBackslashes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newLocalEnv(t)
	sb := e.create("")
	dir := sb.Cwd() + "/bs"
	tree := map[string]string{`a\b.txt`: "backslash", "a/b.txt": "slash", `c\`: "trailing"}
	var entries []files.Entry
	for name, body := range tree {
		entries = append(entries, files.FromBytes(dir+"/"+name, []byte(body)))
	}
	require.NoError(t, sb.FS().WriteFiles(ctx, entries, files.WriteParams{}))

	got := map[string]string{}
	for w, err := range sb.FS().Walk(ctx, dir) {
		require.NoError(t, err)
		if w.Type().IsRegular() {
			data, err := sb.FS().ReadFile(ctx, w.Path)
			require.NoError(t, err)
			got[w.Path[len(dir)+1:]] = string(data)
		}
	}
	assert.Equal(t, tree, got)
}
