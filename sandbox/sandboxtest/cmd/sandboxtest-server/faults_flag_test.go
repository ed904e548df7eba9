//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

// serve runs the server with args until stop, which checks that it stopped
// cleanly, and returns its base URL.
func serve(t *testing.T, args ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	first, err := br.ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, br) }()
	return strings.TrimSpace(strings.TrimPrefix(first, "listening on ")), func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the server did not stop")
		}
	}
}

// Faults given with --fault apply from the start; the control endpoint
// lists them and adds more, and needs the token.
func TestRunWithFaults(t *testing.T) {
	base, stop := serve(t, "--token", "tok",
		"--fault", "GET /v2/sandboxes/* status=503 retry-after=7 times=1",
		"--fault", `POST /v2/sandboxes/sessions/*/cmd status=500 message="lost answer"`)

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	call := func(method, path, token, ctype, body string) (int, http.Header, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(data)
	}

	status, hdr, _ := call("GET", "/api/v2/sandboxes/x", "tok", "", "")
	assert.Equal(t, 503, status)
	assert.Equal(t, "7", hdr.Get("Retry-After"))
	status, _, _ = call("GET", "/api/v2/sandboxes/x", "tok", "", "")
	assert.Equal(t, 404, status, "times=1 is spent")
	status, _, body := call("POST", "/api/v2/sandboxes/sessions/s/cmd", "tok", "application/json", `{"command":"ls"}`)
	assert.Equal(t, 500, status)
	assert.Contains(t, body, "lost answer")

	status, _, _ = call("GET", "/_sandboxtest/faults", "nope", "", "")
	assert.Equal(t, 403, status)
	status, _, body = call("GET", "/_sandboxtest/faults", "tok", "", "")
	require.Equal(t, 200, status)
	assert.Contains(t, body, `"text":"GET /v2/sandboxes/* status=503 retry-after=7 times=1"`)
	status, _, _ = call("POST", "/_sandboxtest/faults", "tok", "text/plain", "DELETE /v2/sandboxes/* status=502")
	assert.Equal(t, 201, status)
	status, _, _ = call("DELETE", "/api/v2/sandboxes/x", "tok", "", "")
	assert.Equal(t, 502, status)
	status, _, body = call("GET", "/_sandboxtest/requests", "tok", "", "")
	require.Equal(t, 200, status)
	assert.Equal(t, 4, strings.Count(body, `"method"`), body)
	stop()
}

func TestRunRejectsBadFault(t *testing.T) {
	var stderr strings.Builder
	err := run(t.Context(), []string{"--fault", "GET /x status=abc"}, io.Discard, &stderr)
	require.ErrorIs(t, err, cli.ErrUsage)
	assert.Contains(t, stderr.String(), "not a whole number")
}

// Without --token the API takes any token, so the control endpoint takes
// none: anyone on the port could otherwise inject faults.
func TestRunControlNeedsToken(t *testing.T) {
	base, stop := serve(t, "--executor", "host")
	defer stop()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest("POST", base+"/_sandboxtest/faults", strings.NewReader(`{"status":500}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer anything")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 403, resp.StatusCode, "no fault injected without --token")

	// The API itself takes any token, as documented.
	req, err = http.NewRequest("GET", base+"/v2/sandboxes", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer anything")
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "any token without --token")
}
