package local_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

var (
	sessionIDPattern = regexp.MustCompile(`^sbx_[A-Za-z0-9]{28}$`)
	genNamePattern   = regexp.MustCompile(`^[a-z]+-[a-z]+-[a-z]+-[A-Za-z0-9]{6}$`)
)

func TestCreate(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/v3/sandboxes", "/v2/sandboxes", "/api/v3/sandboxes", "/api/v2/sandboxes"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			var r createReply
			raw := h.ok("POST", path, map[string]any{"projectId": "prj_1", "ports": []int{3000, 8080}}, &r)

			assert.Regexp(t, genNamePattern, r.Sandbox.Name)
			assert.Regexp(t, sessionIDPattern, r.Session.ID)
			assert.Equal(t, r.Session.ID, r.Sandbox.CurrentSessionID)
			assert.Equal(t, "running", r.Sandbox.Status)
			assert.Equal(t, "running", r.Session.Status)
			assert.True(t, r.Sandbox.Persistent)
			assert.Equal(t, "iad1", r.Sandbox.Region)
			assert.Equal(t, "iad1", r.Session.Region)
			assert.Equal(t, 2, *r.Sandbox.VCPUs)
			assert.Equal(t, 4096, *r.Sandbox.Memory)
			assert.Equal(t, 4096, r.Session.Memory)
			assert.Equal(t, int64(300000), *r.Sandbox.Timeout)
			assert.Equal(t, int64(300000), r.Session.Timeout)
			assert.Equal(t, "/vercel/sandbox", r.Session.Cwd)
			assert.Equal(t, "/vercel/sandbox", r.Sandbox.Cwd)
			require.NotNil(t, r.Session.StartedAt)
			require.NotNil(t, r.Sandbox.ExpiresAt)
			assert.Equal(t, *r.Session.StartedAt+300000, *r.Sandbox.ExpiresAt)
			require.NotNil(t, r.Resumed)
			assert.False(t, *r.Resumed)
			assert.Contains(t, string(raw), `"resumed":false`)
			assert.Equal(t, &wire.NetworkPolicyResp{Mode: "allow-all"}, r.Sandbox.NetworkPolicy)

			sub := strings.ToLower(r.Sandbox.Name)
			want := []wire.Route{
				{URL: "https://" + sub + "-3000.vercel.run", Subdomain: sub + "-3000", Port: 3000},
				{URL: "https://" + sub + "-8080.vercel.run", Subdomain: sub + "-8080", Port: 8080},
			}
			assert.Empty(t, cmp.Diff(want, r.Routes))

			if strings.Contains(path, "v3") {
				assert.Empty(t, r.Sandbox.Runtime)
				assert.Regexp(t, `^vercel/sandbox/universal@sha256:[0-9a-f]{64}$`, r.Sandbox.Image)
			} else {
				assert.Equal(t, "node24", r.Sandbox.Runtime)
				assert.Equal(t, "node24", r.Session.Runtime)
				assert.Empty(t, r.Sandbox.Image)
			}

			got, ok := h.srv.Sandbox(r.Sandbox.Name)
			require.True(t, ok)
			assert.Equal(t, r.Sandbox.CurrentSessionID, got.CurrentSessionID)
		})
	}
}

func TestCreateOptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{
		"name":               "demo_1",
		"ports":              []int{3000},
		"timeout":            60000,
		"resources":          map[string]any{"vcpus": 4},
		"persistent":         false,
		"env":                map[string]string{"A": "1"},
		"tags":               map[string]string{"team": "x"},
		"region":             "sfo1",
		"failoverRegions":    []string{"iad1"},
		"snapshotExpiration": 0,
		"keepLastSnapshots":  map[string]any{"count": 2},
		"__private":          true,
		"unknownKey":         []int{1},
	})
	sb := r.Sandbox
	assert.Equal(t, "demo_1", sb.Name)
	assert.False(t, sb.Persistent)
	assert.Equal(t, 4, *sb.VCPUs)
	assert.Equal(t, 8192, *sb.Memory)
	assert.Equal(t, 8192, r.Session.Memory)
	assert.Equal(t, int64(60000), *sb.Timeout)
	assert.Equal(t, "sfo1", sb.Region)
	assert.Equal(t, []string{"iad1"}, sb.FailoverRegions)
	assert.Equal(t, map[string]string{"team": "x"}, sb.Tags)
	assert.Equal(t, int64(0), *sb.SnapshotExpiration)
	assert.Equal(t, 2, sb.KeepLastSnapshots.Count)
	assert.Equal(t, "https://demo-1-3000.vercel.run", r.Routes[0].URL)
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.create(map[string]any{"name": "taken"})
	ports16 := make([]int, 16)
	for i := range ports16 {
		ports16[i] = 3000 + i
	}
	tests := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"bad name", map[string]any{"name": "bad name"}, 400, "bad_request"},
		{"name too long", map[string]any{"name": strings.Repeat("a", 129)}, 400, "bad_request"},
		{"too many ports", map[string]any{"ports": ports16}, 400, "bad_request"},
		{"port too low", map[string]any{"ports": []int{80}}, 400, "bad_request"},
		{"port too high", map[string]any{"ports": []int{70000}}, 400, "bad_request"},
		{"too many tags", map[string]any{"tags": map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}}, 400, "bad_request"},
		{"failover has region", map[string]any{"region": "iad1", "failoverRegions": []string{"iad1"}}, 400, "bad_request"},
		{"odd vcpus", map[string]any{"resources": map[string]any{"vcpus": 3}}, 400, "bad_request"},
		{"memory mismatch", map[string]any{"resources": map[string]any{"vcpus": 2, "memory": 1024}}, 400, "bad_request"},
		{"timeout too small", map[string]any{"timeout": 10}, 400, "bad_request"},
		{"runtime and image", map[string]any{"runtime": "node22", "image": "node:22"}, 400, "bad_request"},
		{"bad policy mode", map[string]any{"networkPolicy": map[string]any{"mode": "sometimes"}}, 400, "bad_request"},
		{"wrong type", map[string]any{"ports": "3000"}, 400, "bad_request"},
		{"malformed json", []byte(`{"name":`), 400, "bad_request"},
		{"missing snapshot", map[string]any{"source": map[string]any{"type": "snapshot", "snapshotId": "snap_nope"}}, 410, "snapshot_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.fail(tt.status, tt.code, "POST", "/v3/sandboxes", tt.body)
		})
	}
	t.Run("duplicate name", func(t *testing.T) {
		e := h.fail(400, "bad_request", "POST", "/v2/sandboxes", map[string]any{"name": "taken"})
		assert.Equal(t, "A sandbox with the name 'taken' already exists for this project.", e.Message)
	})
	assert.Len(t, h.srv.Sandboxes(), 1)
}

func TestEmptyBodies(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var r createReply
	h.ok("POST", "/v3/sandboxes", []byte{}, &r)
	assert.Regexp(t, genNamePattern, r.Sandbox.Name)
	var stop wire.StopResponse
	h.ok("POST", sessPath(r.Session.ID, "/stop"), []byte{}, &stop)
	assert.Equal(t, "stopped", stop.Session.Status)
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	t.Run("any token by default", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		assert.Equal(t, local.DefaultToken, h.srv.Token())
		assert.NotEqual(t, 2, strings.Count(h.srv.Token(), "."), "the default token must not look like a JWT")
		req, err := http.NewRequest("GET", h.srv.URL()+"/v2/sandboxes", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer whatever")
		resp, err := h.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)

		req, err = http.NewRequest("GET", h.srv.URL()+"/v2/sandboxes", nil)
		require.NoError(t, err)
		resp, err = h.hc.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 403, resp.StatusCode)
	})
	t.Run("exact token", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, local.WithToken("s3cret"))
		assert.Equal(t, "s3cret", h.srv.Token())
		h.ok("GET", "/v2/sandboxes", nil, nil)
		req, err := http.NewRequest("GET", h.srv.URL()+"/v2/sandboxes", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer other")
		resp, err := h.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 403, resp.StatusCode)
		var body map[string]map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		assert.Equal(t, "forbidden", body["error"]["code"])
	})
	t.Run("team and project", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, local.WithTeam("team_test"), local.WithProject("prj_test"))
		h.create(nil)
		h.fail(403, "forbidden", "GET", "/v2/sandboxes?teamId=team_other", nil)
		h.fail(404, "not_found", "POST", "/v3/sandboxes", map[string]any{"projectId": "prj_other"})
		h.fail(404, "not_found", "GET", "/v2/sandboxes?project=prj_other", nil)
		h.ok("GET", "/v2/sandboxes?project=prj_test", nil, nil)
	})
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.fail(404, "not_found", "GET", "/v1/whatever", nil)
	h.fail(404, "not_found", "GET", "/api/v2/sandboxes/nope", nil)
	h.fail(404, "not_found", "GET", sessPath("sbx_nope"), nil)
	h.fail(404, "not_found", "POST", sessPath("sbx_nope", "/cmd"), map[string]any{"command": "echo"})
	h.fail(405, "method_not_allowed", "PUT", "/v2/sandboxes", nil)
	h.fail(405, "method_not_allowed", "GET", "/v3/sandboxes", nil)
	r := h.create(nil)
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/interactive"), map[string]any{})
}

func TestListSandboxesPagination(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 5 {
		h.create(map[string]any{"name": fmt.Sprintf("box-%d", i), "tags": map[string]string{"parity": []string{"even", "odd"}[i%2]}})
	}
	walk := func(query string) []string {
		var names []string
		cursor := ""
		for page := 0; ; page++ {
			require.Less(t, page, 10, "pagination does not end")
			path := "/v2/sandboxes?project=prj_test&limit=2" + query
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var r wire.ListSandboxesResponse
			raw := h.ok("GET", path, nil, &r)
			assert.Contains(t, string(raw), `"next":`)
			assert.Equal(t, len(r.Sandboxes), r.Pagination.Count)
			for _, sb := range r.Sandboxes {
				names = append(names, sb.Name)
			}
			if r.Pagination.Next == nil {
				return names
			}
			cursor = *r.Pagination.Next
		}
	}
	assert.Equal(t, []string{"box-4", "box-3", "box-2", "box-1", "box-0"}, walk(""))
	assert.Equal(t, []string{"box-0", "box-1", "box-2", "box-3", "box-4"}, walk("&sortBy=name&sortOrder=asc"))
	assert.Equal(t, []string{"box-4", "box-2", "box-0"}, walk("&tags=parity:even"))
	assert.Equal(t, []string{"box-3"}, walk("&sortBy=name&namePrefix=box-3"))

	var r wire.ListSandboxesResponse
	raw := h.ok("GET", "/v2/sandboxes", nil, &r)
	assert.Len(t, r.Sandboxes, 5)
	assert.Contains(t, string(raw), `"next":null`)

	for _, q := range []string{"limit=0", "limit=51", "limit=x", "sortOrder=up", "sortBy=size", "cursor=!!", "tags=novalue"} {
		h.fail(400, "bad_request", "GET", "/v2/sandboxes?"+q, nil)
	}

	var sessions wire.ListSessionsResponse
	h.ok("GET", "/v2/sandboxes/sessions?project=prj_test&name=box-2", nil, &sessions)
	require.Len(t, sessions.Sessions, 1)
	assert.Nil(t, sessions.Pagination.Next)
	h.ok("GET", "/v2/sandboxes/sessions?limit=3", nil, &sessions)
	assert.Len(t, sessions.Sessions, 3)
	require.NotNil(t, sessions.Pagination.Next)
}

func TestUpdateSandbox(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "upd", "ports": []int{3000}, "keepLastSnapshots": map[string]any{"count": 3}})

	var got struct {
		Sandbox wire.Sandbox  `json:"sandbox"`
		Routes  *[]wire.Route `json:"routes"`
	}
	h.ok("PATCH", "/v2/sandboxes/upd?projectId=prj_test", map[string]any{"ports": []int{4000, 5000}}, &got)
	require.NotNil(t, got.Routes)
	assert.Equal(t, []wire.Route{
		{URL: "https://upd-4000.vercel.run", Subdomain: "upd-4000", Port: 4000},
		{URL: "https://upd-5000.vercel.run", Subdomain: "upd-5000", Port: 5000},
	}, *got.Routes)
	require.NotNil(t, got.Sandbox.KeepLastSnapshots, "keys not sent are left alone")

	got = struct {
		Sandbox wire.Sandbox  `json:"sandbox"`
		Routes  *[]wire.Route `json:"routes"`
	}{}
	raw := h.ok("PATCH", "/v2/sandboxes/upd", map[string]any{"keepLastSnapshots": nil, "tags": map[string]string{"k": "v"}, "resources": map[string]any{"vcpus": 4, "memory": 8192}, "persistent": false, "timeout": 600000}, &got)
	assert.NotContains(t, string(raw), `"routes"`)
	assert.NotContains(t, string(raw), `keepLastSnapshots`)
	assert.Nil(t, got.Sandbox.KeepLastSnapshots)
	assert.Equal(t, map[string]string{"k": "v"}, got.Sandbox.Tags)
	assert.Equal(t, 4, *got.Sandbox.VCPUs)
	assert.Equal(t, 8192, *got.Sandbox.Memory)
	assert.False(t, got.Sandbox.Persistent)
	assert.Equal(t, int64(600000), *got.Sandbox.Timeout)

	var routes createReply
	h.ok("GET", "/v2/sandboxes/upd", nil, &routes)
	assert.Len(t, routes.Routes, 2)
	assert.Equal(t, r.Session.ID, routes.Session.ID)

	h.fail(400, "bad_request", "PATCH", "/v2/sandboxes/upd", map[string]any{"ports": []int{1}})
	h.fail(400, "bad_request", "PATCH", "/v2/sandboxes/upd", map[string]any{"failoverRegions": []string{"iad1"}})
	h.fail(400, "bad_request", "PATCH", "/v2/sandboxes/upd", map[string]any{"currentSnapshotId": "snap_nope"})
	h.fail(404, "not_found", "PATCH", "/v2/sandboxes/nope", map[string]any{})
}

func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"networkPolicy": map[string]any{
		"allow": map[string]any{
			"api.example.com": []any{map[string]any{"transform": []any{map[string]any{"headers": map[string]string{"Authorization": "Bearer top-secret"}}}}},
			"github.com":      []any{},
			"fwd.example.com": []any{map[string]any{"forwardURL": "https://proxy.example.com"}},
		},
		"subnets": map[string]any{"allow": []string{"10.0.0.0/8"}, "deny": []string{"10.1.0.0/16"}},
	}})
	pol := r.Sandbox.NetworkPolicy
	require.NotNil(t, pol)
	assert.Equal(t, "custom", pol.Mode)
	assert.Equal(t, []string{"api.example.com", "fwd.example.com", "github.com"}, pol.AllowedDomains)
	assert.Equal(t, []string{"10.0.0.0/8"}, pol.AllowedCIDRs)
	assert.Equal(t, []string{"10.1.0.0/16"}, pol.DeniedCIDRs)
	require.Len(t, pol.InjectionRules, 1)
	assert.Equal(t, []string{"Authorization"}, pol.InjectionRules[0].HeaderNames)
	require.Len(t, pol.ForwardRules, 1)
	assert.Equal(t, "https://proxy.example.com", pol.ForwardRules[0].ForwardURL)

	var s wire.SessionResponse
	raw := h.ok("POST", sessPath(r.Session.ID, "/network-policy"), map[string]any{"allow": []string{"*.example.org"}}, &s)
	assert.Equal(t, &wire.NetworkPolicyResp{Mode: "custom", AllowedDomains: []string{"*.example.org"}}, s.Session.NetworkPolicy)
	assert.NotContains(t, string(raw), `"allow"`)
	var s2 wire.SessionResponse
	h.ok("POST", sessPath(r.Session.ID, "/network-policy"), map[string]any{"mode": "deny-all"}, &s2)
	assert.Equal(t, &wire.NetworkPolicyResp{Mode: "deny-all"}, s2.Session.NetworkPolicy)
	sb, _ := h.srv.Sandbox(r.Sandbox.Name)
	assert.Equal(t, "deny-all", sb.NetworkPolicy)
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/network-policy"), map[string]any{"mode": "nope"})

	for _, req := range h.srv.Requests() {
		assert.NotContains(t, string(req.Body), "top-secret")
	}
}

func TestDeleteSandbox(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "gone"})
	c := h.run(r.Session.ID, "block", "never")
	var del struct {
		Sandbox wire.Sandbox `json:"sandbox"`
	}
	h.ok("DELETE", "/v2/sandboxes/gone?projectId=prj_test", nil, &del)
	assert.Equal(t, "stopped", del.Sandbox.Status)
	assert.Equal(t, 137, *h.wait(r.Session.ID, c.ID).ExitCode, "the running command was killed")
	h.fail(404, "not_found", "GET", "/v2/sandboxes/gone", nil)
	h.fail(404, "not_found", "DELETE", "/v2/sandboxes/gone", nil)
	_, ok := h.srv.Sandbox("gone")
	assert.False(t, ok)
	assert.Empty(t, h.srv.Snapshots(), "delete takes no automatic snapshot")
	// The name is free again.
	h.create(map[string]any{"name": "gone"})
}

func TestRequestsLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "logged", "source": map[string]any{"type": "git", "url": "https://example.com/x.git", "password": "hunter2"}})
	h.ok("POST", sessPath(r.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/a.txt", body: "abc"}), nil, "Content-Type", "application/gzip", "x-cwd", "/")

	reqs := h.srv.Requests()
	require.Len(t, reqs, 2)
	create := reqs[0]
	assert.Equal(t, "POST", create.Method)
	assert.Equal(t, "/api/v3/sandboxes", create.Path)
	assert.Equal(t, "team_test", create.Query.Get("teamId"))
	assert.Equal(t, "Bearer [REDACTED]", create.Header.Get("Authorization"))
	assert.Equal(t, 200, create.Status)
	var body map[string]any
	require.NoError(t, json.Unmarshal(create.Body, &body))
	assert.Equal(t, "logged", body["name"])
	assert.Equal(t, "[REDACTED]", body["source"].(map[string]any)["password"])
	for _, req := range reqs {
		for _, vs := range req.Header {
			for _, v := range vs {
				assert.NotContains(t, v, h.srv.Token())
			}
		}
		assert.NotContains(t, string(req.Body), "hunter2")
	}
	write := reqs[1]
	assert.Nil(t, write.Body)
	assert.Equal(t, int64(len(tarGz(t, tarFile{name: "vercel/sandbox/a.txt", body: "abc"}))), write.BodySize)
}
