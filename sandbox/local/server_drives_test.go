package local_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

func TestBaseFoldersExistBeforeTheFirstCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	sid := h.create(map[string]any{"name": "base"}).Session.ID
	h.ok("POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "/tmp/x"}, nil)
	h.ok("POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "/home/vercel-sandbox/x"}, nil)
	for _, p := range []string{"/tmp", "/vercel/sandbox", "/home/vercel-sandbox", "/etc"} {
		h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": p})
	}
}

func TestDriveEndpoints(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var made wire.DriveResponse
	h.ok("POST", "/v2/sandboxes/drives/data", map[string]any{"maxSizeBytes": 1024}, &made)
	assert.Equal(t, "data", made.Drive.Name)
	assert.EqualValues(t, 1024, made.Drive.MaxSizeBytes)
	assert.Equal(t, "iad1", made.Drive.Region)
	var again wire.DriveResponse
	h.ok("POST", "/v2/sandboxes/drives/data", map[string]any{"maxSizeBytes": 4096}, &again)
	assert.Equal(t, made.Drive, again.Drive, "get-or-create finds the drive")

	h.fail(400, "bad_request", "POST", "/v2/sandboxes/drives/data", map[string]any{"maxSizeBytes": -1})
	h.fail(404, "not_found", "GET", "/v2/sandboxes/drives/none", nil)
	h.fail(404, "not_found", "DELETE", "/v2/sandboxes/drives/none", nil)
	h.fail(400, "bad_request", "GET", "/v2/sandboxes/drives?sortBy=size", nil)

	r := h.create(map[string]any{"name": "user", "mounts": map[string]any{"/mnt/data": map[string]any{"drive": "data"}}})
	var got wire.DriveResponse
	h.ok("GET", "/v2/sandboxes/drives/data", nil, &got)
	assert.Equal(t, "user", got.Drive.CurrentSandboxName)
	assert.Equal(t, r.Session.ID, got.Drive.CurrentSessionID)
	h.fail(409, "drive_in_use", "DELETE", "/v2/sandboxes/drives/data", nil)
	h.ok("POST", sessPath(r.Session.ID, "/stop"), nil, nil)

	var list wire.ListDrivesResponse
	h.ok("GET", "/v2/sandboxes/drives", nil, &list)
	require.Len(t, list.Drives, 1)
	assert.Empty(t, list.Drives[0].CurrentSandboxName, "a stopped sandbox holds no drive")
	h.ok("DELETE", "/v2/sandboxes/drives/data", nil, nil)
	h.ok("GET", "/v2/sandboxes/drives", nil, &list)
	assert.Empty(t, list.Drives)
}

func TestForkRouteSurvivesTheDriveRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.create(map[string]any{"name": "src"})
	h.fail(404, "not_found", "POST", "/v2/sandboxes/src/spoon", map[string]any{})
	status, _ := h.call("POST", "/v2/sandboxes/src/fork", map[string]any{"name": "copy"})
	assert.Equal(t, 200, status)
}
