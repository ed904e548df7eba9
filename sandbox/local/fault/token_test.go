package fault_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

// callAs sends a raw request with the bearer token tok and returns the
// status and the body.
func (e *faultEnv) callAs(tok, method, path string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL()+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.hc.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, data
}

// invalidTokenBody reports whether an answer is hosted Vercel's refusal
// of an expired token.
func invalidTokenBody(t *testing.T, data []byte) bool {
	t.Helper()
	var body struct {
		Error struct {
			Code         string `json:"code"`
			InvalidToken bool   `json:"invalidToken"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &body), "%s", data)
	return body.Error.Code == "forbidden" && body.Error.InvalidToken
}

func TestFaultExpireToken(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	h := e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", ExpireToken: true, Times: 1})

	status, data := e.callAs("token-a-0123456789", "GET", "/v2/sandboxes/missing")
	assert.Equal(t, http.StatusForbidden, status, "refused as hosted Vercel refuses an expired token")
	assert.True(t, invalidTokenBody(t, data), "%s", data)
	assert.Equal(t, `GET /v2/sandboxes/* times=1 expire-token`, lastRequest(t, e.srv).Fault)

	// The fault is spent, but the token stays expired, on every path.
	status, _ = e.callAs("token-a-0123456789", "GET", "/v2/sandboxes/missing")
	assert.Equal(t, http.StatusForbidden, status)
	status, _ = e.callAs("token-a-0123456789", "POST", "/v2/sandboxes/sessions/"+sid+"/cmd")
	assert.Equal(t, http.StatusForbidden, status, "refused before any handler")
	assert.Zero(t, e.srv.CommandCount())
	assert.Equal(t, 1, h.Hits(), "a refusal of a token expired earlier is no new hit")

	// Another token is not affected.
	status, _ = e.callAs("token-b-0123456789", "GET", "/v2/sandboxes/missing")
	assert.Equal(t, http.StatusNotFound, status)
}

func TestFaultExpireTokenAfterHandler(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", ExpireToken: true, AfterHandler: true, Times: 1})

	req, err := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL()+"/v2/sandboxes/sessions/"+sid+"/cmd",
		strings.NewReader(`{"command":"echo","args":["hi"]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer token-a-0123456789")
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hc.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the real answer")
	assert.Equal(t, 1, e.srv.CommandCount())

	status, _ := e.callAs("token-a-0123456789", "GET", "/v2/sandboxes/sessions/"+sid)
	assert.Equal(t, http.StatusForbidden, status, "expired once the call was answered")
}

// rotatingProvider hands out a new token each time its token is
// invalidated.
type rotatingProvider struct {
	mu     sync.Mutex
	minted int
}

func (p *rotatingProvider) token() string { return fmt.Sprintf("rotating-token-%d", p.minted) }

func (p *rotatingProvider) Credentials(context.Context) (auth.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return auth.Credentials{Token: p.token(), TeamID: local.TeamID, ProjectID: local.ProjectID}, nil
}

func (p *rotatingProvider) Invalidate(stale string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if stale == p.token() {
		p.minted++
	}
}

// The client gets a fresh token for a token that expires under it, and
// sends the call once more.
func TestFaultExpireTokenClientRefreshes(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	p := &rotatingProvider{}
	c := e.srv.Client(sandbox.WithCredentials(p))
	e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", ExpireToken: true, Times: 1})

	_, err := c.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound, "authorized with the fresh token")
	assert.Equal(t, 1, p.minted)
	var got []int
	for _, r := range e.srv.Requests() {
		got = append(got, r.Status)
	}
	assert.Equal(t, []int{403, 404}, got)

	// A token of a static provider cannot be renewed: the refusal is the answer.
	static := e.srv.Client(sandbox.WithToken("static-token-0123456789"), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", ExpireToken: true, Times: 1})
	_, err = static.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrForbidden)
}

func TestParseFaultExpireToken(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]fault.Fault{
		"GET /a expire-token":                          {Method: "GET", Path: "/a", ExpireToken: true},
		"POST /cmd expire-token after-handler times=1": {Method: "POST", Path: "/cmd", ExpireToken: true, AfterHandler: true, Times: 1},
		"* * expire-token=true latency=5ms":            {ExpireToken: true, Latency: 5e6},
	} {
		f, err := fault.Parse(text)
		require.NoError(t, err, text)
		assert.Equal(t, want, f, text)
		again, err := fault.Parse(f.String())
		require.NoError(t, err, f.String())
		assert.Equal(t, f, again, "round trip of %q", f.String())

		data, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Contains(t, string(data), `"expireToken":true`)
		var back fault.Fault
		require.NoError(t, json.Unmarshal(data, &back))
		assert.Equal(t, f, back)
	}
	for text, msg := range map[string]string{
		"GET /a expire-token status=500":   "expire-token answers",
		"GET /a expire-token cut":          "expire-token answers",
		"GET /a expire-token reset=before": "expire-token answers",
		"GET /a expire-token stall=1s":     "expire-token answers",
	} {
		_, err := fault.Parse(text)
		require.ErrorIs(t, err, fault.ErrInvalid, text)
		assert.Contains(t, err.Error(), msg, text)
	}
}
