package local_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

func TestSnapshots(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "snappy", "persistent": false})
	h.ok("POST", sessPath(r.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/v.txt", body: "v1"}), nil, gzipHeaders()...)

	var first wire.SnapshotResponse
	h.ok("POST", sessPath(r.Session.ID, "/snapshot"), []byte{}, &first)
	s1 := first.Snapshot
	assert.Regexp(t, `^snap_[A-Za-z0-9]+$`, s1.ID)
	assert.Equal(t, "created", s1.Status)
	assert.Equal(t, r.Session.ID, s1.SourceSessionID)
	assert.Equal(t, "iad1", s1.Region)
	assert.Equal(t, []string{"iad1"}, s1.Regions)
	assert.Greater(t, s1.SizeBytes, int64(2), "the file written and the sandbox's own account files")
	require.NotNil(t, s1.ExpiresAt, "default expiration is 30 days")
	assert.Equal(t, s1.CreatedAt+30*24*3600*1000, *s1.ExpiresAt)
	assert.Empty(t, s1.ParentID)
	require.NotNil(t, first.Session)
	assert.Equal(t, "stopped", first.Session.Status)
	h.fail(410, "sandbox_stopped", "POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"command": "echo"})

	sb, ok := h.srv.Sandbox("snappy")
	require.True(t, ok)
	assert.Equal(t, s1.ID, sb.CurrentSnapshotID)

	var got wire.SnapshotResponse
	h.ok("GET", "/v2/sandboxes/snapshots/"+s1.ID, nil, &got)
	assert.Equal(t, s1, got.Snapshot)

	// Resume, change the file, take a second snapshot that never expires.
	var res createReply
	h.ok("GET", "/v2/sandboxes/snappy?resume=true", nil, &res)
	h.ok("POST", sessPath(res.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/v.txt", body: "v2"}), nil, gzipHeaders()...)
	var second wire.SnapshotResponse
	h.ok("POST", sessPath(res.Session.ID, "/snapshot"), map[string]any{"expiration": 0}, &second)
	s2 := second.Snapshot
	assert.Nil(t, s2.ExpiresAt)
	assert.Equal(t, s1.ID, s2.ParentID)

	var list wire.ListSnapshotsResponse
	h.ok("GET", "/v2/sandboxes/snapshots?project=prj_test&name=snappy", nil, &list)
	require.Len(t, list.Snapshots, 2)
	assert.Equal(t, s2.ID, list.Snapshots[0].ID)
	assert.Nil(t, list.Pagination.Next)
	h.ok("GET", "/v2/sandboxes/snapshots?name=other", nil, &list)
	assert.Empty(t, list.Snapshots)

	var tree struct {
		Snapshots []struct {
			Snapshot wire.Snapshot   `json:"snapshot"`
			Siblings []wire.Snapshot `json:"siblings"`
			Count    string          `json:"count"`
		} `json:"snapshots"`
		Anchor *struct {
			Snapshot wire.Snapshot `json:"snapshot"`
		} `json:"anchor"`
		Pagination wire.Pagination `json:"pagination"`
	}
	h.ok("GET", "/v2/sandboxes/snapshots/tree?project=prj_test&snapshotId="+s2.ID, nil, &tree)
	require.NotNil(t, tree.Anchor)
	assert.Equal(t, s2.ID, tree.Anchor.Snapshot.ID)
	require.Len(t, tree.Snapshots, 1)
	assert.Equal(t, s1.ID, tree.Snapshots[0].Snapshot.ID)
	assert.Equal(t, "1", tree.Snapshots[0].Count)
	assert.Nil(t, tree.Pagination.Next)
	h.fail(400, "bad_request", "GET", "/v2/sandboxes/snapshots/tree", nil)
	h.fail(404, "not_found", "GET", "/v2/sandboxes/snapshots/tree?snapshotId=snap_nope", nil)

	// Create from each snapshot.
	for id, want := range map[string]string{s1.ID: "v1", s2.ID: "v2"} {
		var c createReply
		h.ok("POST", "/v3/sandboxes", map[string]any{"source": map[string]any{"type": "snapshot", "snapshotId": id}}, &c)
		assert.Equal(t, id, c.Session.SourceSnapshotID)
		status, body := h.call("POST", sessPath(c.Session.ID, "/fs/read"), map[string]any{"path": "v.txt"})
		assert.Equal(t, 200, status)
		assert.Equal(t, want, string(body))
	}

	// Moving currentSnapshotId makes the next resume restore that snapshot.
	h.ok("PATCH", "/v2/sandboxes/snappy", map[string]any{"currentSnapshotId": s1.ID}, nil)
	h.ok("GET", "/v2/sandboxes/snappy?resume=true", nil, &res)
	status, body := h.call("POST", sessPath(res.Session.ID, "/fs/read"), map[string]any{"path": "v.txt"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "v1", string(body))

	var del wire.SnapshotResponse
	h.ok("DELETE", "/v2/sandboxes/snapshots/"+s2.ID, nil, &del)
	assert.Equal(t, "deleted", del.Snapshot.Status)
	var tomb wire.SnapshotResponse
	h.ok("GET", "/v2/sandboxes/snapshots/"+s2.ID, nil, &tomb)
	assert.Equal(t, "deleted", tomb.Snapshot.Status, "a deleted snapshot stays readable")
	h.fail(404, "not_found", "DELETE", "/v2/sandboxes/snapshots/"+s2.ID, nil)
	h.fail(410, "snapshot_not_found", "POST", "/v3/sandboxes", map[string]any{"source": map[string]any{"type": "snapshot", "snapshotId": s2.ID}})
}

func TestKeepLastSnapshots(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "keep", "keepLastSnapshots": map[string]any{"count": 1}})
	sid := r.Session.ID
	var ids []string
	for range 3 {
		var stop wire.StopResponse
		h.ok("POST", sessPath(sid, "/stop"), nil, &stop)
		require.NotNil(t, stop.Snapshot)
		ids = append(ids, stop.Snapshot.ID)
		var res createReply
		h.ok("GET", "/v2/sandboxes/keep?resume=true", nil, &res)
		sid = res.Session.ID
	}
	var list wire.ListSnapshotsResponse
	h.ok("GET", "/v2/sandboxes/snapshots?name=keep", nil, &list)
	require.Len(t, list.Snapshots, 3, "evicted snapshots stay listed")
	assert.Equal(t, ids[2], list.Snapshots[0].ID)
	assert.Equal(t, []string{"created", "deleted", "deleted"},
		[]string{list.Snapshots[0].Status, list.Snapshots[1].Status, list.Snapshots[2].Status})
}
