package fault_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

func TestControlEndpoint(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t, local.WithToken("secret"))
	ctl := func(method, path, ctype, body, token string) (int, []byte) {
		req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL()+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := e.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, data
	}

	status, _ := ctl("POST", "/_sandboxtest/faults", "", `{"status":500}`, "")
	assert.Equal(t, 403, status, "the token is required")
	status, _ = ctl("POST", "/_sandboxtest/faults", "", `{"status":500}`, "wrong")
	assert.Equal(t, 403, status)
	assert.Empty(t, e.srv.Faults())

	status, data := ctl("POST", "/_sandboxtest/faults", "application/json",
		`{"method":"GET","path":"/v2/sandboxes/*","status":503,"retryAfter":1,"times":1}`, "secret")
	require.Equal(t, 201, status, "%s", data)
	var created struct {
		ID   int64
		Text string
	}
	require.NoError(t, json.Unmarshal(data, &created))
	assert.Equal(t, "GET /v2/sandboxes/* status=503 retry-after=1 times=1", created.Text)

	status, data = ctl("POST", "/_sandboxtest/faults", "text/plain", "POST /v2/sandboxes/sessions/*/cmd status=500", "secret")
	require.Equal(t, 201, status, "%s", data)
	status, data = ctl("POST", "/_sandboxtest/faults", "text/plain", "POST /x nonsense", "secret")
	assert.Equal(t, 400, status)
	code, msg := errorBody(t, data)
	assert.Equal(t, "bad_request", code)
	assert.Contains(t, msg, "needs a value")

	status, _ = ctl("GET", "/api/v2/sandboxes/s", "", "", "wrong")
	assert.Equal(t, 403, status, "a wrong token is refused before faults")
	status, _, _ = e.call("GET", "/api/v2/sandboxes/s", nil)
	assert.Equal(t, 503, status)

	status, data = ctl("GET", "/_sandboxtest/faults", "", "", "secret")
	require.Equal(t, 200, status)
	var list struct {
		Faults []struct {
			ID   int64
			Text string
			Hits int
		}
	}
	require.NoError(t, json.Unmarshal(data, &list))
	require.Len(t, list.Faults, 2)
	assert.Equal(t, 1, list.Faults[0].Hits)

	status, data = ctl("GET", "/_sandboxtest/requests", "", "", "secret")
	require.Equal(t, 200, status)
	var reqs struct {
		Requests []struct {
			Method, Path, Fault string
			Status              int
			Header              map[string][]string
		}
	}
	require.NoError(t, json.Unmarshal(data, &reqs))
	require.Len(t, reqs.Requests, 2, "control calls are not recorded")
	assert.Equal(t, 403, reqs.Requests[0].Status)
	assert.Equal(t, 503, reqs.Requests[1].Status)
	assert.Equal(t, created.Text, reqs.Requests[1].Fault)
	assert.Equal(t, []string{"Bearer [REDACTED]"}, reqs.Requests[1].Header["Authorization"])

	status, _ = ctl("DELETE", fmt.Sprintf("/_sandboxtest/faults/%d", created.ID), "", "", "secret")
	assert.Equal(t, 204, status)
	assert.Len(t, e.srv.Faults(), 1)
	status, _ = ctl("DELETE", fmt.Sprintf("/_sandboxtest/faults/%d", created.ID), "", "", "secret")
	assert.Equal(t, 404, status)
	status, _ = ctl("DELETE", "/_sandboxtest/faults", "", "", "secret")
	assert.Equal(t, 204, status)
	assert.Empty(t, e.srv.Faults())
	status, _ = ctl("PUT", "/_sandboxtest/faults", "", "", "secret")
	assert.Equal(t, 405, status)
}

func TestControlEndpointNeedsInjector(t *testing.T) {
	t.Parallel()
	srv, err := local.New()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	req, err := http.NewRequestWithContext(t.Context(), "POST", ts.URL+fault.ControlPrefix+"/faults", strings.NewReader(`{"status":500}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 404, resp.StatusCode, "a server without an injector has no control endpoint")
}

func TestControlEndpointNeedsServerToken(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t) // no WithToken: the API takes any token
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.srv.URL()+"/_sandboxtest/faults", strings.NewReader(`{"status":500}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer anything")
	resp, err := e.hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 403, resp.StatusCode, "without a server token anyone on the port could inject faults: %s", data)
	assert.Contains(t, string(data), "WithToken")
	assert.Empty(t, e.srv.Faults(), "no fault was injected")
}
