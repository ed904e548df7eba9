package sandbox_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// hostileToken is the token of hostileClient; hostile servers echo it.
const hostileToken = "vcp_hostileCanary0123456789abcdefXYZ"

// hostileClient returns a client of a server the test writes by hand, to
// play a broken or hostile API, with a transport of its own and tiny
// retry delays.
func hostileClient(t *testing.T, h http.HandlerFunc, opts ...sandbox.Option) *sandbox.Client {
	t.Helper()
	ts := httptest.NewServer(h)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.CloseClientConnections()
		ts.Close()
	})
	c, err := sandbox.NewClient(append([]sandbox.Option{
		sandbox.WithBaseURL(ts.URL), sandbox.WithTransport(tr),
		sandbox.WithToken(hostileToken), sandbox.WithTeam("team_hostile"), sandbox.WithProject("prj_hostile"),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}),
	}, opts...)...)
	require.NoError(t, err)
	return c
}

// leakCase is one way a hostile server can put the client's token into
// the text the client builds errors and log lines from. serve answers
// every request, echoing echo (the credential the request carried); call
// makes the client meet it and returns the call's error. Add a case for
// each new error path the server controls.
type leakCase struct {
	name  string
	serve func(w http.ResponseWriter, r *http.Request, echo string)
	call  func(ctx context.Context, c *sandbox.Client) error
}

// getSession is an idempotent call: retried on 429, 5xx and transport
// errors.
func getSession(ctx context.Context, c *sandbox.Client) error {
	_, _, err := c.GetSession(ctx, "sess_hostile")
	return err
}

// forkSandbox is an unsafe call: a 5xx or a broken answer leaves its
// outcome unknown.
func forkSandbox(ctx context.Context, c *sandbox.Client) error {
	_, err := c.Fork(ctx, "hostile", sandbox.ForkParams{})
	return err
}

// echoStatus answers status with the echo in every field the client
// reads: a JSON error (code, message), or a text body, and the request id.
func echoStatus(status int, asJSON bool) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, echo string) {
		w.Header().Set("X-Vercel-Id", "iad1::"+echo)
		w.Header().Set("Retry-After", "0")
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"code": "bad_" + echo, "message": "your token " + echo + " (Bearer " + echo + ")"}})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "<h1>denied "+echo+"</h1>")
	}
}

// echoBrokenHTTP answers with a malformed status line that quotes the
// echo: net/http's transport error repeats it.
func echoBrokenHTTP(w http.ResponseWriter, _ *http.Request, echo string) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 " + echo + " OK\r\n\r\n")
	_ = buf.Flush()
}

func leakCases() []leakCase {
	cases := []leakCase{
		{"2xx that is not JSON", func(w http.ResponseWriter, _ *http.Request, echo string) {
			w.Header().Set("X-Vercel-Id", echo)
			_, _ = io.WriteString(w, "not json: "+echo)
		}, getSession},
		{"malformed answer, retried", echoBrokenHTTP, getSession},
		{"malformed answer to an unsafe call", echoBrokenHTTP, forkSandbox},
		{"502 to an unsafe call", echoStatus(http.StatusBadGateway, true), forkSandbox},
		{"redirect not followed", echoStatus(http.StatusFound, false), getSession},
	}
	// Every status class, in JSON and in text; 429 and 5xx are retried
	// until the retries are exhausted.
	for _, status := range []int{400, 401, 403, 404, 409, 410, 422, 429, 500, 503} {
		for _, asJSON := range []bool{true, false} {
			kind := "text"
			if asJSON {
				kind = "JSON"
			}
			cases = append(cases, leakCase{fmt.Sprintf("%d %s", status, kind), echoStatus(status, asJSON), getSession})
		}
	}
	return cases
}

// TestHostileServerNeverSeesItsEchoInErrors runs every leak case with two
// kinds of token, an opaque one (hidden because the client sent it) and
// an OIDC token (a JWT): neither appears in the error, its %+v form, a
// log line of the client, or a retry event.
func TestHostileServerNeverSeesItsEchoInErrors(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{
		"opaque": "canary_" + strings.Repeat("q7", 12),
		"OIDC":   testJWT(t),
	}
	for _, tc := range leakCases() {
		for kind, token := range tokens {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				var logs lockedBuffer
				c := hostileClient(t, func(w http.ResponseWriter, r *http.Request) {
					tc.serve(w, r, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
				}, sandbox.WithToken(token), sandbox.WithTeam("team_hostile"), sandbox.WithProject("prj_hostile"), sandbox.WithLogger(debugLogger(&logs)),
					sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond,
						OnRetry: func(ev sandbox.RetryEvent) { fmt.Fprintf(&logs, "retry event: %+v %v\n", ev, ev.Err) }}))
				err := tc.call(t.Context(), c)
				require.Error(t, err)
				for what, text := range map[string]string{"Error()": err.Error(), "%+v": fmt.Sprintf("%+v", err), "logs": logs.String()} {
					assert.NotContains(t, text, token, "%s shows the token", what)
				}
			})
		}
	}
}

// testJWT returns an OIDC-shaped token with claims the auth package
// accepts, built at run time.
func testJWT(t *testing.T) string {
	t.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(map[string]string{"alg": "RS256"}) + "." +
		seg(map[string]any{"owner_id": "team_hostile", "project_id": "prj_hostile", "exp": time.Now().Add(time.Hour).Unix()}) +
		".c2lnbmF0dXJl"
}
