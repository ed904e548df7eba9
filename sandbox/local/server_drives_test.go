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

	// Drives are records: a mount is refused, and nothing is created.
	e := h.fail(400, "bad_request", "POST", "/api/v3/sandboxes",
		map[string]any{"projectId": "prj_test", "ports": []int{}, "name": "user", "mounts": map[string]any{"/mnt/data": map[string]any{"drive": "data"}}})
	assert.Contains(t, e.Message, "Drive mounts are not supported")
	h.fail(404, "not_found", "GET", "/v2/sandboxes/user", nil)
	h.create(map[string]any{"name": "user"})
	h.fail(400, "bad_request", "PATCH", "/v2/sandboxes/user", map[string]any{"mounts": map[string]any{"/mnt/data": map[string]any{"drive": "data"}}})
	h.fail(400, "bad_request", "POST", "/v2/sandboxes/user/fork", map[string]any{"name": "copy", "mounts": map[string]any{"/mnt/data": map[string]any{"drive": "data"}}})
	var upd struct{ Sandbox wire.Sandbox }
	h.ok("PATCH", "/v2/sandboxes/user", map[string]any{"mounts": map[string]any{}}, &upd)
	assert.Empty(t, upd.Sandbox.Mounts, "an empty set removes every mount, and is accepted")

	var list wire.ListDrivesResponse
	h.ok("GET", "/v2/sandboxes/drives", nil, &list)
	require.Len(t, list.Drives, 1)
	assert.Empty(t, list.Drives[0].CurrentSandboxName, "no sandbox holds a drive")
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
