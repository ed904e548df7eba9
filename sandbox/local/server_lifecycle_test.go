package local_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

func TestStopThenGone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	sid := r.Session.ID
	done := h.run(sid, "echo", "before")
	h.wait(sid, done.ID)
	running := h.run(sid, "block", "never")

	var stop wire.StopResponse
	h.ok("POST", sessPath(sid, "/stop"), nil, &stop)
	s := stop.Session
	assert.Equal(t, "stopped", s.Status)
	require.NotNil(t, s.StoppedAt)
	require.NotNil(t, s.RequestedStopAt)
	require.NotNil(t, s.Duration)
	assert.Equal(t, int64(0), *s.ActiveCPUDurationMs)
	assert.Equal(t, &wire.NetworkTransfer{}, s.NetworkTransfer)
	require.NotNil(t, stop.Sandbox)
	assert.Equal(t, "stopped", stop.Sandbox.Status)
	assert.Nil(t, stop.Sandbox.ExpiresAt)
	require.NotNil(t, stop.Snapshot, "persistent sandboxes snapshot on stop")
	assert.Equal(t, "created", stop.Snapshot.Status)
	assert.Equal(t, "automatic", stop.Snapshot.CreationMethod)
	assert.Equal(t, stop.Snapshot.ID, stop.Sandbox.CurrentSnapshotID)

	// The running command was killed by the stop.
	assert.Equal(t, 137, *h.wait(sid, running.ID).ExitCode)

	// Every call that needs the VM answers 410 sandbox_stopped.
	resp := h.request(context.Background(), "POST", sessPath(sid, "/cmd"), map[string]any{"command": "echo"})
	body := make([]byte, 200)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	assert.Equal(t, 410, resp.StatusCode)
	assert.JSONEq(t, `{"error":{"code":"sandbox_stopped","message":"Sandbox is stopped"}}`, string(body[:n]))
	gz := tarGz(t, tarFile{name: "a", body: "x"})
	for _, c := range []struct {
		path string
		body any
		hdr  []string
	}{
		{"/cmd", map[string]any{"command": "echo", "wait": true}, nil},
		{"/fs/write", gz, []string{"Content-Type", "application/gzip"}},
		{"/fs/read", map[string]any{"path": "a"}, nil},
		{"/fs/mkdir", map[string]any{"path": "d"}, nil},
		{"/extend-timeout", map[string]any{"duration": 1000}, nil},
		{"/network-policy", map[string]any{"mode": "deny-all"}, nil},
		{"/snapshot", nil, nil},
		{"/interactive", map[string]any{}, nil},
	} {
		h.fail(410, "sandbox_stopped", "POST", sessPath(sid, c.path), c.body, c.hdr...)
	}

	// Finished commands stay readable, their output is released with the
	// session, and a second stop is a no-op.
	assert.Equal(t, 0, *h.wait(sid, done.ID).ExitCode)
	assert.Equal(t, []logFrame{{"error", "output_evicted"}}, h.logs(sid, done.ID))
	var again wire.StopResponse
	h.ok("POST", sessPath(sid, "/stop"), nil, &again)
	assert.Equal(t, "stopped", again.Session.Status)
	assert.Equal(t, *s.StoppedAt, *again.Session.StoppedAt)
	assert.Nil(t, again.Snapshot)
	assert.Len(t, h.srv.Snapshots(), 1)

	var sess struct {
		Session wire.Session `json:"session"`
		Routes  []wire.Route `json:"routes"`
	}
	raw := h.ok("GET", sessPath(sid), nil, &sess)
	assert.Equal(t, "stopped", sess.Session.Status)
	assert.Contains(t, string(raw), `"routes":[]`)
}

func TestStopNonPersistentTakesNoSnapshot(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"persistent": false})
	var stop wire.StopResponse
	raw := h.ok("POST", sessPath(r.Session.ID, "/stop"), nil, &stop)
	assert.NotContains(t, string(raw), `"snapshot"`)
	assert.Empty(t, h.srv.Snapshots())
}

func TestResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "res"})
	old := r.Session.ID
	h.ok("POST", sessPath(old, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/keep.txt", body: "kept"}), nil, "Content-Type", "application/gzip", "x-cwd", "/")

	var got createReply
	h.ok("GET", "/v2/sandboxes/res?projectId=prj_test&resume=true", nil, &got)
	assert.False(t, *got.Resumed, "a running session is returned as it is")
	assert.Equal(t, old, got.Session.ID)

	h.ok("POST", sessPath(old, "/stop"), nil, nil)
	got = createReply{}
	h.ok("GET", "/v2/sandboxes/res?projectId=prj_test", nil, &got)
	assert.False(t, *got.Resumed)
	assert.Equal(t, old, got.Session.ID)
	assert.Equal(t, "stopped", got.Session.Status)
	assert.Equal(t, "stopped", got.Sandbox.Status)

	got = createReply{}
	h.ok("GET", "/v2/sandboxes/res?projectId=prj_test&resume=true", nil, &got)
	assert.True(t, *got.Resumed)
	sid := got.Session.ID
	assert.NotEqual(t, old, sid)
	assert.Regexp(t, sessionIDPattern, sid)
	assert.Equal(t, sid, got.Sandbox.CurrentSessionID)
	assert.Equal(t, "running", got.Session.Status)
	assert.Equal(t, got.Sandbox.CurrentSnapshotID, got.Session.SourceSnapshotID)

	status, body := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "keep.txt"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "kept", string(body))
	h.fail(410, "sandbox_stopped", "POST", sessPath(old, "/fs/read"), map[string]any{"path": "keep.txt"})

	var list wire.ListSessionsResponse
	h.ok("GET", "/v2/sandboxes/sessions?name=res", nil, &list)
	require.Len(t, list.Sessions, 2)
	assert.Equal(t, sid, list.Sessions[0].ID, "newest first")
}

func TestResumeWithDeletedSnapshot(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "lost"})
	var stop wire.StopResponse
	h.ok("POST", sessPath(r.Session.ID, "/stop"), nil, &stop)
	h.ok("DELETE", "/v2/sandboxes/snapshots/"+stop.Snapshot.ID, nil, nil)
	h.fail(410, "snapshot_not_found", "GET", "/v2/sandboxes/lost?resume=true", nil)
}

func TestStoppingStateAnswers422(t *testing.T) {
	t.Parallel()
	h := newHarness(t, local.WithStopDelay(300*time.Millisecond))
	r := h.create(map[string]any{"name": "slow"})
	sid := r.Session.ID

	stopped := make(chan wire.StopResponse, 1)
	go func() {
		var stop wire.StopResponse
		h.ok("POST", sessPath(sid, "/stop"), nil, &stop)
		stopped <- stop
	}()
	waitForStatus(t, h, sid, "stopping")
	h.fail(422, "sandbox_stopping", "POST", sessPath(sid, "/cmd"), map[string]any{"command": "echo"})
	h.fail(422, "sandbox_stopping", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "x"})
	sb, _ := h.srv.Sandbox("slow")
	assert.Equal(t, "stopping", sb.Status)

	// resume=true waits for the stop, then boots a new session.
	var got createReply
	h.ok("GET", "/v2/sandboxes/slow?resume=true", nil, &got)
	assert.True(t, *got.Resumed)
	assert.NotEqual(t, sid, got.Session.ID)
	stop := <-stopped
	assert.Equal(t, "stopped", stop.Session.Status)
}

func TestSnapshottingStateAnswers422(t *testing.T) {
	t.Parallel()
	h := newHarness(t, local.WithStopDelay(300*time.Millisecond))
	r := h.create(nil)
	sid := r.Session.ID
	done := make(chan wire.SnapshotResponse, 1)
	go func() {
		var snap wire.SnapshotResponse
		h.ok("POST", sessPath(sid, "/snapshot"), nil, &snap)
		done <- snap
	}()
	waitForStatus(t, h, sid, "snapshotting")
	h.fail(422, "sandbox_snapshotting", "POST", sessPath(sid, "/cmd"), map[string]any{"command": "echo"})
	snap := <-done
	require.NotNil(t, snap.Session)
	assert.Equal(t, "stopped", snap.Session.Status)
	assert.NotNil(t, snap.Session.SnapshottedAt)
}

func waitForStatus(t *testing.T, h *harness, sid, status string) {
	t.Helper()
	require.Eventually(t, func() bool {
		s, ok := h.srv.Session(sid)
		return ok && s.Status == status
	}, 5*time.Second, 5*time.Millisecond)
	var got struct {
		Session wire.Session `json:"session"`
	}
	h.ok("GET", sessPath(sid), nil, &got)
	assert.Equal(t, status, got.Session.Status)
}

func TestExpiryWithInjectedClock(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, local.WithClock(clock.Now), local.WithMaxTimeout(time.Hour))
	r := h.create(map[string]any{"name": "clocked", "timeout": 10000})
	sid := r.Session.ID
	c := h.run(sid, "block", "never")

	var ext wire.SessionResponse
	h.ok("POST", sessPath(sid, "/extend-timeout"), map[string]any{"duration": 5000}, &ext)
	assert.Equal(t, int64(15000), ext.Session.Timeout)
	e := h.fail(400, "sandbox_timeout_invalid", "POST", sessPath(sid, "/extend-timeout"), map[string]any{"duration": int64(time.Hour / time.Millisecond)})
	assert.NotEmpty(t, e.Message)
	h.fail(400, "bad_request", "POST", sessPath(sid, "/extend-timeout"), map[string]any{})

	clock.Advance(14 * time.Second)
	h.ok("POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "still-alive"}, nil)
	clock.Advance(time.Second)

	var got createReply
	h.ok("GET", "/v2/sandboxes/clocked", nil, &got)
	assert.Equal(t, "stopped", got.Session.Status)
	assert.Equal(t, int64(15000), *got.Session.Duration)
	h.fail(410, "sandbox_stopped", "POST", sessPath(sid, "/cmd"), map[string]any{"command": "echo"})
	assert.Equal(t, 137, *h.wait(sid, c.ID).ExitCode)
	require.Len(t, h.srv.Snapshots(), 1, "expiry of a persistent sandbox snapshots it")
}

func TestExpiryWithRealClock(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"timeout": 1000})
	require.Eventually(t, func() bool {
		for _, s := range h.srv.Sessions() {
			if s.ID == r.Session.ID {
				return s.Status == "stopped"
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
}

func TestStopAndExpireHelpers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.create(nil)
	b := h.create(map[string]any{"persistent": false})
	require.NoError(t, h.srv.Stop(a.Session.ID))
	require.NoError(t, h.srv.ExpireSession(b.Session.ID))
	require.Error(t, h.srv.Stop("sbx_nope"))
	require.Error(t, h.srv.ExpireSession("sbx_nope"))
	h.fail(410, "sandbox_stopped", "POST", sessPath(a.Session.ID, "/cmd"), map[string]any{"command": "echo"})
	h.fail(410, "sandbox_stopped", "POST", sessPath(b.Session.ID, "/cmd"), map[string]any{"command": "echo"})
}

// A server made with New and Serve (as the standalone binary does) kills
// its processes and removes its directory on Close.
func TestServeAndClose(t *testing.T) {
	t.Parallel()
	exec := newFakeExec()
	srv, err := local.New(local.WithExecutor(exec), local.WithFriendly())
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	require.Eventually(t, func() bool { return srv.URL() != "" }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "http://"+ln.Addr().String(), srv.URL())

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	h := &harness{t: t, srv: srv, exec: exec, hc: hc}
	r := h.create(nil)
	c := h.run(r.Session.ID, "block", "never")
	dir, err := srv.HostPath(r.Sandbox.Name, "/")
	require.NoError(t, err)

	// Clients waiting on commands get their final answers at Close.
	type waitResult struct {
		status int
		body   string
	}
	waited := make(chan waitResult, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL()+sessPath(r.Session.ID, "/cmd/", c.ID, "?wait=true"), nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := hc.Do(req)
		if err != nil {
			waited <- waitResult{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			body = append(body, " / "+err.Error()...)
		}
		waited <- waitResult{resp.StatusCode, string(body)}
	}()
	attached := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "block", "args": []string{"never"}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
	defer attached.Body.Close()
	br := bufio.NewReader(attached.Body)
	readLine(t, br, lineTimeout)
	assert.Equal(t, `{"stream":"stdout","data":"started\n"}`+"\n", readLine(t, br, lineTimeout))
	require.Eventually(t, func() bool { return len(srv.Requests()) >= 4 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)

	srv.Close()
	srv.Close() // idempotent
	require.NoError(t, <-served)
	w := <-waited
	assert.Equal(t, 200, w.status, w.body)
	assert.Contains(t, w.body, `"exitCode":137`)
	assert.Contains(t, readLine(t, br, lineTimeout), `"exitCode":137`)
	assert.Equal(t, 137, *srv.Commands()[0].Command.ExitCode)
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
	for _, s := range srv.Sessions() {
		assert.Equal(t, "stopped", s.Status)
	}
}

func TestFork(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	src := h.create(map[string]any{"name": "origin", "ports": []int{3000}, "tags": map[string]string{"k": "v"}, "env": map[string]string{"E": "1"}, "resources": map[string]any{"vcpus": 4}})
	h.ok("POST", sessPath(src.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/f.txt", body: "from snapshot"}), nil, "Content-Type", "application/gzip", "x-cwd", "/")
	h.ok("POST", sessPath(src.Session.ID, "/snapshot"), map[string]any{"expiration": 0}, nil)

	var fork createReply
	h.ok("POST", "/v2/sandboxes/origin/fork?projectId=prj_test", map[string]any{"name": "copy", "ports": []int{4000}}, &fork)
	assert.Equal(t, "copy", fork.Sandbox.Name)
	assert.False(t, *fork.Resumed)
	assert.Equal(t, "running", fork.Session.Status)
	assert.Equal(t, 4, *fork.Sandbox.VCPUs)
	assert.Equal(t, map[string]string{"k": "v"}, fork.Sandbox.Tags)
	require.Len(t, fork.Routes, 1)
	assert.Equal(t, 4000, fork.Routes[0].Port)
	assert.NotEmpty(t, fork.Session.SourceSnapshotID)

	status, body := h.call("POST", sessPath(fork.Session.ID, "/fs/read"), map[string]any{"path": "f.txt"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "from snapshot", string(body))
	c := h.run(fork.Session.ID, "env")
	h.wait(fork.Session.ID, c.ID)
	stdout, _, err := h.srv.Output(c.ID)
	require.NoError(t, err)
	assert.Equal(t, "E=1\n", stdout)

	var unnamed createReply
	h.ok("POST", "/v2/sandboxes/origin/fork", nil, &unnamed)
	assert.Regexp(t, genNamePattern, unnamed.Sandbox.Name)
	h.fail(404, "not_found", "POST", "/v2/sandboxes/nope/fork", nil)
	h.fail(400, "bad_request", "POST", "/v2/sandboxes/origin/fork", map[string]any{"name": "copy"})
}

// The same for a server made with NewServer: Close (also run by the test
// cleanup) ends attached streams with their final line.
func TestNewServerCloseDeliversFinalLine(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	resp := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "block", "args": []string{"never"}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readLine(t, br, lineTimeout)
	readLine(t, br, lineTimeout)
	h.srv.Close()
	assert.Contains(t, readLine(t, br, lineTimeout), `"exitCode":137`)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Empty(t, rest)
}

// Handler can be mounted in a server of one's own; after Close it answers
// 503 without doing anything.
func TestHandlerAfterClose(t *testing.T) {
	t.Parallel()
	srv, err := local.New()
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	assert.Empty(t, srv.URL(), "not listening by itself")
	srv.Close()
	req, err := http.NewRequest("POST", ts.URL+"/v3/sandboxes", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, srv.Sandboxes())
}
