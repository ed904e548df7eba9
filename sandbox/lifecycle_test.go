package sandbox_test

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

func TestCreateV3WithoutRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "demo"})
	require.NoError(t, err)

	assert.Equal(t, "demo", sb.Name())
	assert.Equal(t, sandbox.StatusRunning, sb.Session().Status)
	assert.NotEmpty(t, sb.SessionID())
	assert.Equal(t, "/vercel", sb.Cwd(), "hosted Vercel's default image works in /vercel")

	reqs := requests(e.srv, http.MethodPost, "/sandboxes")
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v3/sandboxes", reqs[0].Path)
	assert.Equal(t, local.TeamID, reqs[0].Query.Get("teamId"))
	want := map[string]any{"projectId": local.ProjectID, "name": "demo", "ports": []any{}}
	assert.Empty(t, cmp.Diff(want, jsonBody(t, reqs[0])), "create body (-want +got)")
}

func TestCreateV2WithRuntime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{
		Name:    "rt",
		Runtime: "node24",
		Ports:   []int{3000},
		Timeout: 2 * time.Minute,
		VCPUs:   4,
		Env:     map[string]string{"A": "1"},
		Tags:    map[string]string{"team": "x"},
	})
	require.NoError(t, err)

	reqs := requests(e.srv, http.MethodPost, "/sandboxes")
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v2/sandboxes", reqs[0].Path)
	want := map[string]any{
		"projectId": local.ProjectID, "name": "rt", "runtime": "node24",
		"ports": []any{3000.0}, "timeout": 120000.0, "resources": map[string]any{"vcpus": 4.0},
		"env": map[string]any{"A": "1"}, "tags": map[string]any{"team": "x"},
	}
	assert.Empty(t, cmp.Diff(want, jsonBody(t, reqs[0])), "create body (-want +got)")

	info := sb.Info()
	assert.Equal(t, "node24", info.Runtime)
	assert.Equal(t, 4, info.VCPUs)
	assert.Equal(t, 2*time.Minute, sb.Session().Timeout)
	require.Len(t, sb.Routes(), 1)
	assert.Equal(t, 3000, sb.Routes()[0].Port)
	u, err := sb.Domain(3000)
	require.NoError(t, err)
	assert.Contains(t, u, "https://")
	_, err = sb.Domain(4000)
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestCreateInvalidInputSendsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ports16 := make([]int, 16)
	for i := range ports16 {
		ports16[i] = 3000 + i
	}
	tags6 := map[string]string{}
	for i := range 6 {
		tags6[fmt.Sprint("k", i)] = "v"
	}
	cases := map[string]sandbox.CreateParams{
		"bad name":         {Name: "bad name"},
		"16 ports":         {Ports: ports16},
		"port 80":          {Ports: []int{80}},
		"6 tags":           {Tags: tags6},
		"negative timeout": {Timeout: -time.Second},
		"runtime+image":    {Runtime: "node24", Image: "vercel/sandbox/universal:latest"},
		"vcpus 3":          {VCPUs: 3},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.c.Create(t.Context(), p)
			var ie *sandbox.InputError
			require.ErrorAs(t, err, &ie)
			assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
			assert.NotEmpty(t, ie.Field)
			// GetOrCreate validates before its first request too.
			p.Name = "valid-name"
			if name != "bad name" {
				_, err = e.c.GetOrCreate(t.Context(), p)
				assert.ErrorAs(t, err, &ie)
			}
		})
	}
	assert.Empty(t, e.srv.Requests(), "no request may reach the server")
}

func TestGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("box")

	got, err := e.c.Get(t.Context(), "box")
	require.NoError(t, err)
	assert.Equal(t, sb.SessionID(), got.SessionID())
	assert.Equal(t, "box", got.Info().Name)

	reqs := requests(e.srv, http.MethodGet, "/v2/sandboxes/box")
	require.Len(t, reqs, 1)
	assert.Equal(t, local.ProjectID, reqs[0].Query.Get("projectId"))
	assert.False(t, reqs[0].Query.Has("resume"), "resume is sent only when asked for")
}

func TestGetWithResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("box")
	old := sb.SessionID()
	require.NoError(t, e.srv.Stop(old))

	// Without Resume the handle holds the stopped session.
	stale, err := e.c.Get(t.Context(), "box")
	require.NoError(t, err)
	assert.Equal(t, old, stale.SessionID())
	assert.Equal(t, sandbox.StatusStopped, stale.Session().Status)

	got, err := e.c.Resume(t.Context(), "box")
	require.NoError(t, err)
	assert.NotEqual(t, old, got.SessionID())
	assert.Equal(t, sandbox.StatusRunning, got.Session().Status)
	require.Len(t, resumeRequests(e.srv), 1)
}

func TestGetOrCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	sb, err := e.c.GetOrCreate(t.Context(), sandbox.CreateParams{Name: "goc"})
	require.NoError(t, err)
	assert.Equal(t, "goc", sb.Name())
	require.Len(t, requests(e.srv, http.MethodGet, "/v2/sandboxes/goc"), 1, "a GET first")
	require.Len(t, requests(e.srv, http.MethodPost, "/v3/sandboxes"), 1, "404 → create")

	again, err := e.c.GetOrCreate(t.Context(), sandbox.CreateParams{Name: "goc"})
	require.NoError(t, err)
	assert.Equal(t, sb.SessionID(), again.SessionID())
	assert.Len(t, requests(e.srv, http.MethodGet, "/v2/sandboxes/goc"), 2)
	assert.Len(t, requests(e.srv, http.MethodPost, "/v3/sandboxes"), 1, "an existing sandbox is not created again")
	assert.Len(t, e.srv.Sandboxes(), 1)
}

func TestListFollowsPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var names []string
	for i := range 5 {
		names = append(names, e.create(fmt.Sprintf("sb-%d", i)).Name())
	}
	slices.Reverse(names) // newest first

	var got []string
	for info, err := range e.c.List(t.Context(), sandbox.ListParams{PageSize: 2}) {
		require.NoError(t, err)
		got = append(got, info.Name)
	}
	assert.Equal(t, names, got)
	reqs := requests(e.srv, http.MethodGet, "/v2/sandboxes")
	require.Len(t, reqs, 3, "pages of 2, 2 and 1")
	assert.Equal(t, "2", reqs[0].Query.Get("limit"))
	assert.Equal(t, local.ProjectID, reqs[0].Query.Get("project"))
	assert.False(t, reqs[0].Query.Has("cursor"))
	assert.NotEmpty(t, reqs[1].Query.Get("cursor"))
	assert.NotEmpty(t, reqs[2].Query.Get("cursor"))
}

func TestListBreakStopsFetching(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 5 {
		e.create(fmt.Sprintf("sb-%d", i))
	}
	n := 0
	for _, err := range e.c.List(t.Context(), sandbox.ListParams{PageSize: 2}) {
		require.NoError(t, err)
		n++
		if n == 2 {
			break
		}
	}
	assert.Len(t, requests(e.srv, http.MethodGet, "/v2/sandboxes"), 1, "breaking on the last item of a page fetches no other page")

	n = 0
	for _, err := range e.c.List(t.Context(), sandbox.ListParams{PageSize: 2}) {
		require.NoError(t, err)
		n++
		if n == 3 {
			break
		}
	}
	assert.Len(t, requests(e.srv, http.MethodGet, "/v2/sandboxes"), 3, "the second listing fetched 2 pages")
}

func TestListInvalidParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []sandbox.ListParams{{PageSize: 51}, {SortBy: "size"}, {NamePrefix: "x"}, {TagKey: "k"}} {
		var err error
		for _, err = range e.c.List(t.Context(), p) {
			break
		}
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput, "%+v", p)
	}
	assert.Empty(t, e.srv.Requests())
}

func TestUpdatePortsGivesRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("upd")
	require.Empty(t, sb.Routes())

	require.NoError(t, sb.Update(t.Context(), sandbox.UpdateParams{Ports: []int{3000, 4000}}))
	var ports []int
	for _, r := range sb.Routes() {
		ports = append(ports, r.Port)
		assert.NotEmpty(t, r.URL)
	}
	slices.Sort(ports)
	assert.Equal(t, []int{3000, 4000}, ports)

	reqs := requests(e.srv, http.MethodPatch, "/v2/sandboxes/upd")
	require.Len(t, reqs, 1)
	assert.Empty(t, cmp.Diff(map[string]any{"ports": []any{3000.0, 4000.0}}, jsonBody(t, reqs[0])))

	// The client-level Update reports the routes too, and an empty list
	// removes them all.
	_, routes, err := e.c.Update(t.Context(), "upd", sandbox.UpdateParams{Ports: []int{}})
	require.NoError(t, err)
	assert.Empty(t, routes)
	reqs = requests(e.srv, http.MethodPatch, "/v2/sandboxes/upd")
	require.Len(t, reqs, 2)
	assert.Empty(t, cmp.Diff(map[string]any{"ports": []any{}}, jsonBody(t, reqs[1])))
}

func TestUpdateTimeoutExtendsRunningSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("upd")
	before := sb.Session().Timeout
	require.Equal(t, 5*time.Minute, before)

	require.NoError(t, sb.Update(t.Context(), sandbox.UpdateParams{Timeout: 10 * time.Minute}))
	ext := requests(e.srv, http.MethodPost, "/extend-timeout")
	require.Len(t, ext, 1)
	assert.Equal(t, map[string]any{"duration": 300000.0}, jsonBody(t, ext[0]))
	assert.Equal(t, 10*time.Minute, sb.Session().Timeout)
	assert.Equal(t, 10*time.Minute, sb.Info().Timeout)
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("gone")
	require.NoError(t, sb.Delete(t.Context(), sandbox.DeleteParams{}))
	_, ok := e.srv.Sandbox("gone")
	assert.False(t, ok)
	_, err := e.c.Get(t.Context(), "gone")
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	assert.ErrorIs(t, e.c.Delete(t.Context(), "gone", sandbox.DeleteParams{}), sandbox.ErrNotFound)
}

func TestDeleteOrphanSnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.create("kept")
	e.create("pruned")
	require.NoError(t, e.c.Delete(t.Context(), "kept", sandbox.DeleteParams{}))
	require.NoError(t, e.c.Delete(t.Context(), "pruned", sandbox.DeleteParams{OrphanSnapshots: true}))
	kept := requests(e.srv, http.MethodDelete, "/kept")
	pruned := requests(e.srv, http.MethodDelete, "/pruned")
	require.Len(t, kept, 1)
	require.Len(t, pruned, 1)
	assert.False(t, kept[0].Query.Has("deleteOrphanSnapshots"), "the zero DeleteParams asks for nothing more")
	assert.Equal(t, "true", pruned[0].Query.Get("deleteOrphanSnapshots"))
}

func TestForkCopiesSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "src", Ports: []int{3000}, Env: map[string]string{"K": "V"}})
	require.NoError(t, err)
	require.NoError(t, src.FS().WriteFile(t.Context(), "state.txt", []byte("from source"), 0o644))
	// Stopping a persistent sandbox snapshots it; the fork boots from it.
	_, err = src.Stop(t.Context())
	require.NoError(t, err)

	child, err := src.Fork(t.Context(), sandbox.ForkParams{Name: "child"})
	require.NoError(t, err)
	assert.Equal(t, "child", child.Name())
	assert.NotEqual(t, src.SessionID(), child.SessionID())
	assert.Equal(t, sandbox.StatusRunning, child.Session().Status)
	require.Len(t, child.Routes(), 1, "ports are copied")

	data, err := child.FS().ReadFile(t.Context(), "state.txt")
	require.NoError(t, err)
	assert.Equal(t, "from source", string(data))

	reqs := requests(e.srv, http.MethodPost, "/v2/sandboxes/src/fork")
	require.Len(t, reqs, 1)
	assert.Equal(t, map[string]any{"name": "child"}, jsonBody(t, reqs[0]))

	_, err = e.c.Fork(t.Context(), "missing", sandbox.ForkParams{})
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("sess")
	first := sb.SessionID()
	_, err := sb.Stop(t.Context())
	require.NoError(t, err)
	second, err := sb.Resume(t.Context())
	require.NoError(t, err)
	require.NotEqual(t, first, second.ID)
	e.create("other")

	var ids []string
	for s, err := range sb.Sessions(t.Context()) {
		require.NoError(t, err)
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{second.ID, first}, ids, "newest first, only this sandbox")

	ids = nil
	for s, err := range e.c.ListSessions(t.Context(), sandbox.PageParams{SandboxName: "sess", PageSize: 1, Ascending: true}) {
		require.NoError(t, err)
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{first, second.ID}, ids)

	s, _, err := e.c.GetSession(t.Context(), first)
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopped, s.Status)
}

func TestSnapshots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("snap")
	sid := sb.SessionID()
	require.NoError(t, sb.FS().WriteFile(t.Context(), "f.txt", []byte("v1"), 0o644))

	snap, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{})
	require.NoError(t, err)
	assert.NotEmpty(t, snap.ID)
	assert.Equal(t, sandbox.SnapshotCreated, snap.Status)
	assert.Equal(t, sid, snap.SourceSessionID)
	assert.Equal(t, sandbox.StatusStopped, sb.Session().Status, "a snapshot stops the session")
	assert.Equal(t, snap.ID, sb.Info().CurrentSnapshotID)
	reqs := requests(e.srv, http.MethodPost, "/snapshot")
	require.Len(t, reqs, 1)
	assert.Zero(t, reqs[0].BodySize, "no body without an expiration")

	got, err := e.c.GetSnapshot(t.Context(), snap.ID)
	require.NoError(t, err)
	assert.Equal(t, snap.ID, got.ID)

	// A second snapshot with an explicit expiration (resumes first).
	never := time.Duration(0)
	snap2, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{Expiration: &never})
	require.NoError(t, err)
	assert.True(t, snap2.ExpiresAt.IsZero(), "expiration 0 never expires")
	reqs = requests(e.srv, http.MethodPost, "/snapshot")
	require.Len(t, reqs, 2)
	assert.Equal(t, map[string]any{"expiration": 0.0}, jsonBody(t, reqs[1]))

	var ids []string
	for s, err := range e.c.ListSnapshots(t.Context(), sandbox.PageParams{SandboxName: "snap"}) {
		require.NoError(t, err)
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{snap2.ID, snap.ID}, ids)

	del, err := e.c.DeleteSnapshot(t.Context(), snap.ID)
	require.NoError(t, err)
	assert.Equal(t, sandbox.SnapshotDeleted, del.Status)
	tomb, err := e.c.GetSnapshot(t.Context(), snap.ID)
	require.NoError(t, err, "a deleted snapshot stays readable, as on the API")
	assert.Equal(t, sandbox.SnapshotDeleted, tomb.Status)
	_, err = e.c.GetSnapshot(t.Context(), "bad/id")
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestStopReturnsFinalSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("stop")
	sid := sb.SessionID()

	res, err := sb.Stop(t.Context())
	require.NoError(t, err)
	assert.False(t, res.AlreadyStopped)
	assert.Equal(t, sid, res.Session.ID)
	assert.Equal(t, sandbox.StatusStopped, res.Session.Status)
	assert.False(t, res.Session.StoppedAt.IsZero(), "stoppedAt")
	require.NotNil(t, res.Session.NetworkTransfer, "usage is reported after a stop")
	require.NotNil(t, res.Sandbox)
	assert.Equal(t, sandbox.StatusStopped, res.Sandbox.Status)
	require.NotNil(t, res.Snapshot, "a persistent sandbox is snapshotted on stop")
	assert.Equal(t, res.Snapshot.ID, res.Sandbox.CurrentSnapshotID)
	assert.Equal(t, sandbox.StatusStopped, sb.Session().Status)
	ws, ok := e.srv.Session(sid)
	require.True(t, ok)
	assert.Equal(t, "stopped", ws.Status)

	again, err := sb.Stop(t.Context())
	require.NoError(t, err)
	assert.True(t, again.AlreadyStopped)
	assert.Equal(t, sid, again.Session.ID)
	assert.Equal(t, sandbox.StatusStopped, again.Session.Status)
	assert.Len(t, resumeRequests(e.srv), 0, "Stop never resumes")
}

func TestStopSessionFromAnotherClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("remote")
	sid := sb.SessionID() // what another process would have stored

	other := e.srv.Client()
	res, err := other.StopSession(t.Context(), sid)
	require.NoError(t, err)
	assert.Equal(t, sid, res.Session.ID)
	assert.Equal(t, sandbox.StatusStopped, res.Session.Status)
	ws, _ := e.srv.Session(sid)
	assert.Equal(t, "stopped", ws.Status)

	again, err := other.StopSession(t.Context(), sid)
	require.NoError(t, err, "stopping a stopped session is not an error")
	assert.Equal(t, sandbox.StatusStopped, again.Session.Status)

	_, err = other.StopSession(t.Context(), "sbx_doesnotexist")
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	_, err = other.StopSession(t.Context(), "../etc")
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestStopSandboxByName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("named")

	other := e.srv.Client()
	res, err := other.Stop(t.Context(), "named")
	require.NoError(t, err)
	assert.False(t, res.AlreadyStopped)
	assert.Equal(t, sb.SessionID(), res.Session.ID)
	assert.Equal(t, sandbox.StatusStopped, res.Session.Status)

	again, err := other.Stop(t.Context(), "named")
	require.NoError(t, err)
	assert.True(t, again.AlreadyStopped)
	assert.Len(t, requests(e.srv, http.MethodPost, "/stop"), 1, "a stopped sandbox is not stopped again")

	_, err = other.Stop(t.Context(), "nobody")
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
}

func TestExtendTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("ext")
	s, err := sb.ExtendTimeout(t.Context(), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 6*time.Minute, s.Timeout)
	assert.Equal(t, 6*time.Minute, sb.Session().Timeout)
	_, err = sb.ExtendTimeout(t.Context(), 30*time.Hour) // past the 24 h maximum
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "sandbox_timeout_invalid", ae.Code)
}

func TestGetOrCreateRecreatesWhenSnapshotGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("phoenix")
	require.NoError(t, sb.FS().WriteFile(t.Context(), "old.txt", []byte("old"), 0o644))
	res, err := sb.Stop(t.Context())
	require.NoError(t, err)
	require.NotNil(t, res.Snapshot)
	_, err = e.c.DeleteSnapshot(t.Context(), res.Snapshot.ID)
	require.NoError(t, err)

	// The snapshot needed to resume is gone: 410 snapshot_not_found.
	_, err = e.c.Resume(t.Context(), "phoenix")
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "snapshot_not_found", ae.Code)

	again, err := e.c.GetOrCreate(t.Context(), sandbox.CreateParams{Name: "phoenix"})
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusRunning, again.Session().Status)
	assert.Len(t, requests(e.srv, http.MethodDelete, "/v2/sandboxes/phoenix"), 1, "deleted, then created again")
	_, err = again.FS().ReadFile(t.Context(), "old.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a new sandbox")
}

func TestSetNetworkPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("net")
	s, err := sb.SetNetworkPolicy(t.Context(), sandbox.DenyAll())
	require.NoError(t, err)
	require.NotNil(t, s.NetworkPolicy)
	assert.Equal(t, "deny-all", s.NetworkPolicy.Mode)
	reqs := requests(e.srv, http.MethodPost, "/network-policy")
	require.Len(t, reqs, 1)
	assert.Equal(t, map[string]any{"mode": "deny-all"}, jsonBody(t, reqs[0]))

	s, err = sb.SetNetworkPolicy(t.Context(), &sandbox.NetworkPolicy{Allow: []string{"github.com", "*.npmjs.org"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"github.com", "*.npmjs.org"}, s.NetworkPolicy.AllowedDomains)

	_, err = sb.SetNetworkPolicy(t.Context(), &sandbox.NetworkPolicy{Mode: "deny-all", Allow: []string{"x"}})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Len(t, requests(e.srv, http.MethodPost, "/network-policy"), 2)
}

// Two callers racing to create one name: the loser's create is refused
// with 400 "already exists", and GetOrCreate adopts the winner's sandbox.
func TestGetOrCreateAdoptsTheWinnerOfARace(t *testing.T) {
	t.Parallel()
	var raced atomic.Bool
	winner := local.WithMiddleware(func(_ *local.Server, next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/sandboxes") && !raced.Swap(true) {
				// The winner's create lands first, then this one loses.
				body, _ := io.ReadAll(r.Body)
				first := r.Clone(r.Context())
				first.Body = io.NopCloser(bytes.NewReader(body))
				next.ServeHTTP(httptest.NewRecorder(), first)
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			next.ServeHTTP(w, r)
		})
	})
	e := newEnv(t, winner)
	sb, err := e.c.GetOrCreate(t.Context(), sandbox.CreateParams{Name: "raced"})
	require.NoError(t, err)
	assert.Equal(t, "raced", sb.Name())
	assert.Len(t, e.srv.Sandboxes(), 1, "one sandbox: the winner's")
}

// WaitStopped returns once the session has really stopped, with the
// sandbox's current snapshot the one the stop took.
func TestWaitStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithStopDelay(100*time.Millisecond))
	sb := e.create("waits")
	other, err := e.c.Get(t.Context(), "waits")
	require.NoError(t, err)
	stopped := make(chan *sandbox.StopResult, 1)
	go func() {
		res, _ := other.Stop(t.Context())
		stopped <- res
	}()
	s, err := sb.WaitStopped(t.Context())
	require.NoError(t, err)
	assert.Equal(t, sandbox.StatusStopped, s.Status)
	res := <-stopped
	require.NotNil(t, res)
	require.NotNil(t, res.Snapshot)
	assert.Equal(t, res.Snapshot.ID, sb.Info().CurrentSnapshotID, "the handle knows the snapshot the stop took")
}

func TestGitSourceParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := sandbox.CreateParams{Name: "from-git", Source: sandbox.GitSource("https://example.com/repo.git",
		sandbox.GitParams{Depth: 1, Revision: "v1.2.0", Username: "x-access-token", Password: "secret-token"})}
	_, _ = e.c.Create(t.Context(), p) // the local server may not clone; the request is what matters
	var src map[string]any
	for _, r := range requests(e.srv, http.MethodPost, "/sandboxes") {
		if s, ok := jsonBody(t, r)["source"].(map[string]any); ok {
			src = s
		}
	}
	require.NotNil(t, src, "the create request carries a source")
	assert.Equal(t, "git", src["type"])
	assert.Equal(t, "https://example.com/repo.git", src["url"])
	assert.Equal(t, 1.0, src["depth"])
	assert.Equal(t, "v1.2.0", src["revision"])
	assert.Equal(t, "x-access-token", src["username"])

	_, _ = e.c.Create(t.Context(), sandbox.CreateParams{Name: "full-clone", Source: sandbox.GitSource("https://example.com/repo.git", sandbox.GitParams{})})
	reqs := requests(e.srv, http.MethodPost, "/sandboxes")
	last, ok := jsonBody(t, reqs[len(reqs)-1])["source"].(map[string]any)
	require.True(t, ok)
	assert.NotContains(t, last, "depth", "the zero GitParams clones in full")
	assert.NotContains(t, last, "revision")
}
