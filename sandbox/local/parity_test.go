package local_test

import (
	"encoding/json"
	"net/http"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// What hosted Vercel answers (recorded in arugula-salad/wisp,
// e2e/providers/vercel/golden and docs/providers/vercel.md), the server
// answers.

// hostedSnapshot takes a snapshot of session sid, which hosted Vercel
// answers with 201.
func hostedSnapshot(h *harness, sid string, body any) wire.SnapshotResponse {
	h.t.Helper()
	status, data := h.call("POST", sessPath(sid, "/snapshot"), body)
	require.Equal(h.t, http.StatusCreated, status, "%s", data)
	var r wire.SnapshotResponse
	require.NoError(h.t, json.Unmarshal(data, &r))
	return r
}

// A create that names neither a runtime nor an image boots in /vercel, with
// HOME there, as the recorded creates do; a legacy runtime keeps
// /vercel/sandbox.
func TestCreateWithoutRuntimeOrImageWorksInVercel(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	for _, tc := range []struct {
		path string
		body map[string]any
		cwd  string
	}{
		{"/v3/sandboxes", map[string]any{"name": "plain3"}, "/vercel"},
		{"/v2/sandboxes", map[string]any{"name": "plain2"}, "/vercel"},
		{"/v3/sandboxes", map[string]any{"name": "image", "image": "ubuntu:24.04"}, "/vercel"},
		{"/v2/sandboxes", map[string]any{"name": "legacy", "runtime": "node22"}, "/vercel/sandbox"},
	} {
		tc.body["projectId"], tc.body["ports"] = "prj_test", []int{}
		var r createReply
		h.ok("POST", tc.path, tc.body, &r)
		assert.Equal(t, tc.cwd, r.Session.Cwd, "%s %v", tc.path, tc.body)
		assert.Equal(t, tc.cwd, r.Sandbox.Cwd, "%s %v", tc.path, tc.body)
		c := h.wait(r.Session.ID, h.run(r.Session.ID, "env").ID)
		assert.Equal(t, tc.cwd, c.Cwd, "commands start in the session's cwd")
	}
}

// A sandbox made from a snapshot reports it as its currentSnapshotId, and
// so deleting the snapshot's source sandbox with deleteOrphanSnapshots
// keeps it.
func TestSnapshotOfAnotherSandboxIsNotAnOrphan(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	src := h.create(map[string]any{"name": "src", "persistent": false})
	h.ok("POST", sessPath(src.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "vercel/v.txt", body: "v1"}), nil, gzipHeaders()...)
	snap := hostedSnapshot(h, src.Session.ID, map[string]any{"expiration": 0})

	made := h.create(map[string]any{"name": "made", "source": map[string]any{"type": "snapshot", "snapshotId": snap.Snapshot.ID}})
	assert.Equal(t, snap.Snapshot.ID, made.Sandbox.CurrentSnapshotID)
	assert.Equal(t, snap.Snapshot.ID, made.Session.SourceSnapshotID)

	h.ok("DELETE", "/v2/sandboxes/src?deleteOrphanSnapshots=true", nil, nil)
	var got wire.SnapshotResponse
	h.ok("GET", "/v2/sandboxes/snapshots/"+snap.Snapshot.ID, nil, &got)
	assert.Equal(t, "created", got.Snapshot.Status, "the snapshot another sandbox was made from is kept")

	again := h.create(map[string]any{"name": "again", "source": map[string]any{"type": "snapshot", "snapshotId": snap.Snapshot.ID}})
	_, body := h.call("POST", sessPath(again.Session.ID, "/fs/read"), map[string]any{"path": "/vercel/v.txt"})
	assert.Equal(t, "v1", string(body), "a sandbox is still made from it")

	// With no sandbox left on it, the snapshot is an orphan.
	lone := h.create(map[string]any{"name": "lone", "persistent": false})
	loneSnap := hostedSnapshot(h, lone.Session.ID, map[string]any{"expiration": 0})
	h.ok("PATCH", "/v2/sandboxes/lone", map[string]any{"currentSnapshotId": ""}, nil)
	h.ok("DELETE", "/v2/sandboxes/lone?deleteOrphanSnapshots=true", nil, nil)
	h.ok("GET", "/v2/sandboxes/snapshots/"+loneSnap.Snapshot.ID, nil, &got)
	assert.Equal(t, "deleted", got.Snapshot.Status)
}

// Hosted Vercel refuses namePrefix without sortBy=name, and a snapshot
// expiration under a day (other than 0), with 400 bad_request.
func TestHostedRefusesWhatItRefuses(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	h.create(map[string]any{"name": "abc"})
	e := h.fail(400, "bad_request", "GET", "/v2/sandboxes?namePrefix=a", nil)
	assert.Equal(t, "Invalid request: `namePrefix` is only valid when `sortBy` is `name`.", e.Message)
	h.fail(400, "bad_request", "GET", "/v2/sandboxes?namePrefix=a&sortBy=createdAt", nil)
	var list wire.ListSandboxesResponse
	h.ok("GET", "/v2/sandboxes?namePrefix=a&sortBy=name", nil, &list)
	assert.Len(t, list.Sandboxes, 1)

	r := h.create(map[string]any{"name": "snap"})
	for _, ms := range []int64{1000, -1, 86_399_999} {
		e := h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/snapshot"), map[string]any{"expiration": ms})
		assert.Equal(t, "`expiration` must be 0 (no expiration) or >= 86400000 ms (1 day).", e.Message)
	}
	snap := hostedSnapshot(h, r.Session.ID, map[string]any{"expiration": 86_400_000})
	require.NotNil(t, snap.Snapshot.ExpiresAt)
	assert.Equal(t, snap.Snapshot.CreatedAt+86_400_000, *snap.Snapshot.ExpiresAt)
}

// GET …/sessions/{sid}/cmd lists the session's commands in the order they
// started, running ones with exitCode null.
func TestListSessionCommands(t *testing.T) {
	t.Parallel()
	for _, hosted := range []bool{true, false} {
		h := newHarness(t)
		if hosted {
			h = newHostedHarness(t)
		}
		r := h.create(map[string]any{"name": "cmds"})
		sid := r.Session.ID
		var empty wire.ListCommandsResponse
		data := h.ok("GET", sessPath(sid, "/cmd"), nil, &empty)
		assert.JSONEq(t, `{"commands":[]}`, string(data))

		first := h.wait(sid, h.run(sid, "echo", "one").ID)
		running := h.run(sid, "block", "g")
		var list wire.ListCommandsResponse
		h.ok("GET", sessPath(sid, "/cmd"), nil, &list)
		require.Len(t, list.Commands, 2)
		assert.Equal(t, first, list.Commands[0])
		assert.Equal(t, running.ID, list.Commands[1].ID)
		assert.Nil(t, list.Commands[1].ExitCode)
		assert.Equal(t, []string{"g"}, list.Commands[1].Args)
		h.exec.open("g")
		h.wait(sid, running.ID)

		h.fail(404, "not_found", "GET", sessPath("sbx_none", "/cmd"), nil)
		h.ok("POST", sessPath(sid, "/stop"), nil, nil)
		if hosted {
			h.fail(410, "sandbox_stopped", "GET", sessPath(sid, "/cmd"), nil)
		} else {
			h.ok("GET", sessPath(sid, "/cmd"), nil, &list)
			assert.Len(t, list.Commands, 2)
		}
	}
}

// The fields hosted Vercel sends that the API reference does not list:
// architecture (sandbox, session, snapshot), sourceSandboxName and
// projectId (session).
func TestHostedExtraFields(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	r := h.create(map[string]any{"name": "extra"})
	assert.Equal(t, runtime.GOARCH, r.Sandbox.Architecture)
	assert.Equal(t, runtime.GOARCH, r.Session.Architecture)
	assert.Equal(t, "extra", r.Session.SourceSandboxName)
	assert.Equal(t, "prj_test", r.Session.ProjectID)
	snap := hostedSnapshot(h, r.Session.ID, nil)
	assert.Equal(t, runtime.GOARCH, snap.Snapshot.Architecture)
	assert.Equal(t, "extra", snap.Session.SourceSandboxName)
}

// netExec is the test executor, deciding the network of a sandbox without
// a policy as the isolated executor does.
type netExec struct {
	*fakeExec
	mode string
}

func (e netExec) DefaultNetworkPolicy() string { return e.mode }

// A sandbox without a network policy reports what its commands get from
// the executor; a policy a client sets is reported as set.
func TestDefaultNetworkPolicyIsWhatIsEnforced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		exec local.Executor
		want string
	}{
		{netExec{newFakeExec(), "deny-all"}, "deny-all"},
		{netExec{newFakeExec(), "allow-all"}, "allow-all"},
		{newFakeExec(), "allow-all"},
	} {
		h := newHostedHarness(t, local.WithExecutor(tc.exec))
		r := h.create(map[string]any{"name": "net"})
		require.NotNil(t, r.Sandbox.NetworkPolicy)
		assert.Equal(t, tc.want, r.Sandbox.NetworkPolicy.Mode)
		require.NotNil(t, r.Session.NetworkPolicy)
		assert.Equal(t, tc.want, r.Session.NetworkPolicy.Mode)

		set := h.create(map[string]any{"name": "set", "networkPolicy": map[string]any{"mode": "allow-all"}})
		assert.Equal(t, "allow-all", set.Sandbox.NetworkPolicy.Mode)
	}
}

// A backslash is part of a file name, as Linux has it: a\b.txt and
// a/b.txt are two files, and each reads back as written.
func TestUploadKeepsBackslashes(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	r := h.create(map[string]any{"name": "bs"})
	sid := r.Session.ID
	h.ok("POST", sessPath(sid, "/fs/write"), tarGz(t,
		tarFile{name: `vercel/a\b.txt`, body: "backslash"},
		tarFile{name: "vercel/a/b.txt", body: "slash"},
		tarFile{name: `vercel/..\up.txt`, body: "inside"},
	), nil, gzipHeaders()...)
	for name, want := range map[string]string{`/vercel/a\b.txt`: "backslash", "/vercel/a/b.txt": "slash", `/vercel/..\up.txt`: "inside"} {
		_, body := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": name})
		assert.Equal(t, want, string(body), name)
	}
	h.fail(404, "not_found", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "/up.txt"})
}
