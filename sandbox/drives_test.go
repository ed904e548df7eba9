package sandbox_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

func TestDrivesLifecycle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)

	d, err := e.c.GetOrCreateDrive(ctx, "cache", sandbox.DriveParams{MaxSize: 1 << 30})
	require.NoError(t, err)
	require.Equal(t, "cache", d.Name)
	require.EqualValues(t, 1<<30, d.MaxSize)
	require.NotEmpty(t, d.ID)
	require.False(t, d.CreatedAt.IsZero())
	again, err := e.c.GetOrCreateDrive(ctx, "cache", sandbox.DriveParams{MaxSize: 2 << 30})
	require.NoError(t, err)
	require.Equal(t, d.ID, again.ID, "the second call gets the drive the first made")
	require.EqualValues(t, 1<<30, again.MaxSize, "settings apply only at creation")

	got, err := e.c.GetDrive(ctx, "cache")
	require.NoError(t, err)
	require.Equal(t, d.ID, got.ID)
	_, err = e.c.GetDrive(ctx, "absent")
	require.ErrorIs(t, err, sandbox.ErrNotFound)

	// The local server keeps drives as records and refuses to mount one.
	_, err = e.c.Create(ctx, sandbox.CreateParams{Mounts: map[string]sandbox.Mount{"/mnt/cache": d.Mount()}})
	require.ErrorIs(t, err, sandbox.ErrBadRequest)
	sb := e.create("")
	_, _, err = e.c.Update(ctx, sb.Name(), sandbox.UpdateParams{Mounts: map[string]sandbox.Mount{"/mnt/cache": d.SnapshotMount()}})
	require.ErrorIs(t, err, sandbox.ErrBadRequest)
	gone, err := e.c.DeleteDrive(ctx, "cache")
	require.NoError(t, err)
	require.Equal(t, d.ID, gone.ID)
	_, err = e.c.DeleteDrive(ctx, "cache")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestListDrivesPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	for i := range 5 {
		_, err := e.c.GetOrCreateDrive(ctx, fmt.Sprintf("d%d", i), sandbox.DriveParams{})
		require.NoError(t, err)
	}
	_, err := e.c.GetOrCreateDrive(ctx, "other", sandbox.DriveParams{})
	require.NoError(t, err)

	var names []string
	for d, err := range e.c.ListDrives(ctx, sandbox.DriveListParams{NamePrefix: "d", SortBy: "name", Ascending: true, PageSize: 2}) {
		require.NoError(t, err)
		names = append(names, d.Name)
	}
	require.Equal(t, []string{"d0", "d1", "d2", "d3", "d4"}, names)
	require.Len(t, requests(e.srv, "GET", "/v2/sandboxes/drives"), 3, "three pages of two")

	for _, err := range e.c.ListDrives(ctx, sandbox.DriveListParams{SortBy: "size"}) {
		require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	}
}

func TestDriveInputIsValidated(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	for _, bad := range []string{"", "a/b", "tab\there"} {
		_, err := e.c.GetOrCreateDrive(ctx, bad, sandbox.DriveParams{})
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
		_, err = e.c.GetDrive(ctx, bad)
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
		_, err = e.c.DeleteDrive(ctx, bad)
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
	}
	_, err := e.c.GetOrCreateDrive(ctx, "ok", sandbox.DriveParams{MaxSize: -1})
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	require.Empty(t, e.srv.Requests())
}

func TestSnapshotTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	sb, err := e.c.Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	var ids []string
	for range 3 {
		snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
		require.NoError(t, err)
		ids = append(ids, snap.ID)
		_, err = sb.Resume(ctx)
		require.NoError(t, err)
	}
	_, err = e.c.DeleteSnapshot(ctx, ids[0])
	require.NoError(t, err)

	tree, err := e.c.SnapshotTree(ctx, ids[2], sandbox.SnapshotTreeParams{PageSize: 1})
	require.NoError(t, err)
	require.Equal(t, ids[2], tree.Anchor.Snapshot.ID)
	require.Len(t, tree.Lineage, 2, "two ancestors, over two pages")
	require.Equal(t, ids[1], tree.Lineage[0].Snapshot.ID)
	require.Equal(t, ids[0], tree.Lineage[1].Snapshot.ID)
	require.Equal(t, sandbox.SnapshotStatus("deleted"), tree.Lineage[1].Snapshot.Status, "a deleted ancestor stays in the tree")
	require.Equal(t, 1, tree.Lineage[1].Count)

	down, err := e.c.SnapshotTree(ctx, ids[0], sandbox.SnapshotTreeParams{Descendants: true})
	require.NoError(t, err)
	require.Len(t, down.Lineage, 2)
	require.Equal(t, ids[1], down.Lineage[0].Snapshot.ID)

	_, err = e.c.SnapshotTree(ctx, "snap_missing", sandbox.SnapshotTreeParams{})
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = e.c.SnapshotTree(ctx, "", sandbox.SnapshotTreeParams{})
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestDriveCallsMapAPIErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	e.srv.Inject(fault.Fault{Path: "/v2/sandboxes/drives/**", Status: 403, Times: 3})
	_, err := e.c.GetOrCreateDrive(ctx, "d", sandbox.DriveParams{})
	require.ErrorIs(t, err, sandbox.ErrForbidden, "permission denied")
	_, err = e.c.DeleteDrive(ctx, "d")
	require.ErrorIs(t, err, sandbox.ErrForbidden)
	for _, err := range e.c.ListDrives(ctx, sandbox.DriveListParams{}) {
		require.ErrorIs(t, err, sandbox.ErrForbidden)
	}
	e.srv.Inject(fault.Fault{Path: "/v2/sandboxes/snapshots/tree", Status: 403, Times: 1})
	_, err = e.c.SnapshotTree(ctx, "snap_x", sandbox.SnapshotTreeParams{})
	require.ErrorIs(t, err, sandbox.ErrForbidden)
}
