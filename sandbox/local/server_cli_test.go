//go:build unix

package local_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// The official CLI (npm sandbox 4.5.0) creates and forks every sandbox
// with the private field "__interactive": true and refuses the answer when
// its session has no interactivePort. Before a terminal it asks the
// session's interactive endpoint for a URL and token, probes GET /health on
// that URL's host, then opens the WebSocket. These tests send what it
// sends, in that order.

// newTerminalHarness is newHarness with an executor that runs terminals.
func newTerminalHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
}

// cliCreate is the body of the CLI's create, as it sends it.
func cliCreate() map[string]any {
	return map[string]any{
		"projectId":     "prj_test",
		"ports":         []int{3000},
		"timeout":       300000,
		"resources":     map[string]any{"vcpus": 2},
		"__interactive": true,
	}
}

func routePorts(routes []wire.Route) []int {
	ports := make([]int, 0, len(routes))
	for _, r := range routes {
		ports = append(ports, r.Port)
	}
	return ports
}

func TestCLICreateReportsInteractivePort(t *testing.T) {
	t.Parallel()
	h := newTerminalHarness(t)
	var r createReply
	h.ok("POST", "/api/v3/sandboxes", cliCreate(), &r)
	require.NotNil(t, r.Session.InteractivePort, "the CLI refuses a session without interactivePort")
	port := *r.Session.InteractivePort
	assert.Equal(t, 8443, port)
	assert.ElementsMatch(t, []int{3000, port}, routePorts(r.Routes), "hosted routes the terminal's port too")

	var got createReply
	h.ok("GET", "/api/v2/sandboxes/sessions/"+r.Session.ID, nil, &got)
	require.NotNil(t, got.Session.InteractivePort)
	assert.Equal(t, port, *got.Session.InteractivePort)
	assert.ElementsMatch(t, []int{3000, port}, routePorts(got.Routes))

	var fork createReply
	h.ok("POST", "/api/v2/sandboxes/"+r.Sandbox.Name+"/fork?projectId=prj_test", map[string]any{"__interactive": true}, &fork)
	require.NotNil(t, fork.Session.InteractivePort, "the CLI's fork refuses a session without interactivePort")
	assert.Equal(t, port, *fork.Session.InteractivePort)
}

func TestCreateWithoutInteractiveReportsNoInteractivePort(t *testing.T) {
	t.Parallel()
	h := newTerminalHarness(t)
	r := h.create(map[string]any{"ports": []int{3000}})
	assert.Nil(t, r.Session.InteractivePort)
	assert.Equal(t, []int{3000}, routePorts(r.Routes))
	body := h.ok("GET", "/api/v2/sandboxes/sessions/"+r.Session.ID, nil, nil)
	assert.NotContains(t, string(body), "interactivePort")
}

func TestInteractiveCreateWithoutTerminalsLeavesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // its executor runs no terminals
	h.fail(http.StatusBadRequest, "bad_request", "POST", "/api/v3/sandboxes", cliCreate())
	var list struct {
		Sandboxes []wire.Sandbox `json:"sandboxes"`
	}
	h.ok("GET", "/api/v2/sandboxes?projectId=prj_test", nil, &list)
	assert.Empty(t, list.Sandboxes, "a refused create leaves no sandbox behind")
}

func TestCLITerminalHealthThenWebSocket(t *testing.T) {
	t.Parallel()
	h := newTerminalHarness(t)
	var r createReply
	h.ok("POST", "/api/v3/sandboxes", cliCreate(), &r)

	var ticket wire.InteractiveResponse
	h.ok("POST", sessPath(r.Session.ID, "/interactive"), map[string]any{}, &ticket)
	u, err := url.Parse(ticket.URL)
	require.NoError(t, err)

	// The probe: GET /health on the terminal host, no token.
	resp, err := h.hc.Get("http://" + u.Host + "/health")
	require.NoError(t, err)
	health, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", health)
	hresp, err := h.hc.Head("http://" + u.Host + "/health")
	require.NoError(t, err)
	_ = hresp.Body.Close()
	assert.Equal(t, http.StatusOK, hresp.StatusCode)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, ticket.URL+"?token="+url.QueryEscape(ticket.Token), nil)
	require.NoError(t, err)
	defer conn.CloseNow()
	start, err := json.Marshal(map[string]any{
		"type":    "start",
		"command": "sh",
		"args":    []string{"-c", `test -t 0 && echo "tty $TERM"; stty size; exit 3`},
		"env":     []string{"TERM=xterm-256color", "PS1=$ "},
		"cwd":     r.Session.Cwd,
		"cols":    90,
		"rows":    30,
	})
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, websocket.MessageText, start))

	var out strings.Builder
	for {
		typ, data, err := conn.Read(ctx)
		require.NoError(t, err, "output so far: %q", out.String())
		if typ == websocket.MessageBinary {
			out.Write(data)
			continue
		}
		var exit wire.PTYExitFrame
		require.NoError(t, json.Unmarshal(data, &exit), "%s", data)
		require.Equal(t, wire.PTYExit, exit.Type, "%s", data)
		require.NotNil(t, exit.Code)
		assert.Equal(t, 3, *exit.Code)
		break
	}
	assert.Contains(t, out.String(), "tty xterm-256color")
	assert.Contains(t, out.String(), "30 90")
}
