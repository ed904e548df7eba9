package fault_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// faultEnv is a fake with a scripted "job" command and a raw HTTP client.
type faultEnv struct {
	t   *testing.T
	srv *sandboxtest.Server
	hc  *http.Client
}

// jobSteps is the output of the "job" command: with the command line and
// the final line, its attached stream has five lines.
var jobSteps = sandboxtest.Steps{}.Stdout("one\n").Stdout("two\n").Stdout("three\n").Exit(0)

func newFaultEnv(t *testing.T, opts ...local.Option) *faultEnv {
	t.Helper()
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("job"), jobSteps)
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	srv := sandboxtest.NewServer(t, append([]local.Option{local.WithExecutor(script)}, opts...)...)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &faultEnv{t: t, srv: srv, hc: &http.Client{Transport: tr}}
}

// do sends a raw request with the server's token; body is JSON-encoded
// unless it is a string.
func (e *faultEnv) do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(e.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL()+path, rd)
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+e.srv.Token())
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.hc.Do(req)
}

// call sends a raw request and returns the status, a header and the body.
func (e *faultEnv) call(method, path string, body any) (int, http.Header, []byte) {
	e.t.Helper()
	resp, err := e.do(e.t.Context(), method, path, body)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, resp.Header, data
}

// session creates a sandbox and returns its session id.
func (e *faultEnv) session() string {
	e.t.Helper()
	sb, err := e.srv.Client().Create(e.t.Context(), sandbox.CreateParams{})
	require.NoError(e.t, err)
	return sb.SessionID()
}

// runAttached starts "job" attached and returns the open response.
func (e *faultEnv) runAttached(ctx context.Context, sid string) *http.Response {
	e.t.Helper()
	resp, err := e.do(ctx, http.MethodPost, "/api/v2/sandboxes/sessions/"+sid+"/cmd",
		map[string]any{"command": "job", "args": []string{}, "env": map[string]string{}, "wait": true, "logs": true})
	require.NoError(e.t, err)
	e.t.Cleanup(func() { resp.Body.Close() })
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	return resp
}

// errorBody decodes the API's error envelope.
func errorBody(t *testing.T, data []byte) (code, message string) {
	t.Helper()
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(data, &body), "%s", data)
	return body.Error.Code, body.Error.Message
}

// lastRequest returns the last request the fake recorded.
func lastRequest(t *testing.T, srv *sandboxtest.Server) local.Request {
	t.Helper()
	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	return reqs[len(reqs)-1]
}

func TestFaultStatusCodeAndRetryAfter(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	h := e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", Status: 503,
		Code: "overloaded", Message: "try later", RetryAfter: 1500 * time.Millisecond, Times: 1})

	status, hdr, body := e.call("GET", "/api/v2/sandboxes/missing", nil)
	assert.Equal(t, 503, status)
	assert.Equal(t, "2", hdr.Get("Retry-After"), "whole seconds, rounded up")
	assert.Equal(t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
	assert.NotEmpty(t, hdr.Get("X-Vercel-Id"))
	code, msg := errorBody(t, body)
	assert.Equal(t, "overloaded", code)
	assert.Equal(t, "try later", msg)
	r := lastRequest(t, e.srv)
	assert.Equal(t, 503, r.Status)
	assert.Equal(t, `GET /v2/sandboxes/* status=503 code=overloaded message="try later" retry-after=1.5s times=1`, r.Fault)

	// Spent: the real handler answers.
	status, _, body = e.call("GET", "/v2/sandboxes/missing", nil)
	assert.Equal(t, 404, status)
	code, _ = errorBody(t, body)
	assert.Equal(t, "not_found", code)
	assert.Empty(t, lastRequest(t, e.srv).Fault)
	assert.Equal(t, 1, h.Hits())
}

func TestFaultDefaultCodeAndMessage(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	e.srv.Inject(fault.Fault{Status: 502})
	status, hdr, body := e.call("GET", "/v2/sandboxes", nil)
	assert.Equal(t, 502, status)
	assert.Empty(t, hdr.Get("Retry-After"))
	code, msg := errorBody(t, body)
	assert.Equal(t, "bad_gateway", code)
	assert.Equal(t, "Bad Gateway", msg)
}

func TestFaultMatching(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault        fault.Fault
		method, path string
		want         bool
	}{
		{fault.Fault{Path: "/v2/sandboxes/sessions/*/cmd"}, "POST", "/api/v2/sandboxes/sessions/sbx_1/cmd", true},
		{fault.Fault{Path: "/v2/sandboxes/sessions/*/cmd"}, "POST", "/v2/sandboxes/sessions/sbx_1/cmd", true},
		{fault.Fault{Path: "/api/v2/sandboxes/sessions/*/cmd"}, "POST", "/v2/sandboxes/sessions/sbx_1/cmd", true},
		{fault.Fault{Path: "/v2/sandboxes/sessions/*/cmd"}, "GET", "/v2/sandboxes/sessions/sbx_1/cmd/cmd_1", false},
		{fault.Fault{Path: "/v2/sandboxes/sessions/*/cmd/*"}, "GET", "/v2/sandboxes/sessions/sbx_1/cmd/cmd_1", true},
		{fault.Fault{Path: "/v2/sandboxes/sessions/*/cmd/cmd_*/logs"}, "GET", "/v2/sandboxes/sessions/s/cmd/cmd_9/logs", true},
		{fault.Fault{Path: "/v2/sandboxes/**"}, "GET", "/v2/sandboxes", true},
		{fault.Fault{Path: "/v2/sandboxes/**"}, "DELETE", "/v2/sandboxes/x/y/z", true},
		{fault.Fault{Path: "/v2/sandboxes/**"}, "POST", "/v3/sandboxes", false},
		{fault.Fault{Method: "post"}, "POST", "/v3/sandboxes", true},
		{fault.Fault{Method: "POST"}, "GET", "/v2/sandboxes", false},
		{fault.Fault{Method: "*", Path: "*"}, "PATCH", "/v2/sandboxes/a", true},
	}
	for _, tc := range cases {
		t.Run(tc.fault.String()+" "+tc.method+" "+tc.path, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t)
			f := tc.fault
			f.Status = http.StatusTeapot
			h := e.srv.Inject(f)
			status, _, _ := e.call(tc.method, tc.path, nil)
			assert.Equal(t, tc.want, status == http.StatusTeapot, "status %d", status)
			assert.Equal(t, tc.want, h.Hits() == 1)
		})
	}
}

func TestFaultBeforeHandlerStartsNothing(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	c := e.srv.Client()
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 500, Times: 1})

	res, err := sb.Command("job").Run(t.Context())
	assert.Nil(t, res)
	var ou *sandbox.OutcomeUnknownError
	require.ErrorAs(t, err, &ou)
	assert.Equal(t, sb.SessionID(), ou.SessionID)
	assert.Zero(t, e.srv.CommandCount(), "the real handler did not run")
	r := lastRequest(t, e.srv)
	assert.Equal(t, 500, r.Status)
	assert.NotEmpty(t, r.Fault)
}

func TestFaultAfterHandlerRunsOnce(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	c := e.srv.Client()
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 500, Times: 1, AfterHandler: true})

	_, err = sb.Command("job").Run(t.Context())
	require.ErrorIs(t, err, sandbox.ErrUnknownResult)
	cmds := e.srv.Commands()
	require.Len(t, cmds, 1, "the command ran once")
	require.NotNil(t, cmds[0].Command.ExitCode, "to its end, before the answer")
	stdout, _, err := e.srv.Output(cmds[0].Command.ID)
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", stdout)
	assert.Equal(t, 500, lastRequest(t, e.srv).Status)
}

// TestFaultRefusesNotExecutedAfterHandler: a 429, 410 or 422
// sandbox_stopping answer tells the client that nothing ran, so it sends
// the command again. Staged after the real handler, such an answer would
// make one Run start the command twice and blame the client for it.
func TestFaultRefusesNotExecutedAfterHandler(t *testing.T) {
	t.Parallel()
	const cmd = "/v2/sandboxes/sessions/*/cmd"
	refused := []fault.Fault{
		{Method: "POST", Path: cmd, Status: 429, AfterHandler: true},
		{Path: "*", Status: 429, RetryAfter: time.Second, AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 410, AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 410, Code: "gone_elsewhere", AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 422, AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 422, Code: "sandbox_snapshotting", AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 422, Body: `{"error":{"code":"sandbox_stopping"}}`, AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 429, Reset: fault.ResetBeforeHeaders, AfterHandler: true},
	}
	e := newFaultEnv(t, local.WithToken("secret"))
	for _, f := range refused {
		err := f.Validate()
		require.ErrorIs(t, err, fault.ErrInvalid, "%s", f)
		assert.Contains(t, err.Error(), "contradicts the API contract", "%s", f)
		_, err = fault.Parse(f.String())
		require.ErrorIs(t, err, fault.ErrInvalid, "the text form is refused too: %s", f)
		data, merr := json.Marshal(f)
		require.NoError(t, merr)
		status, _, _ := e.call("POST", fault.ControlPrefix+"/faults", string(data))
		assert.Equal(t, http.StatusBadRequest, status, "the control endpoint refuses it: %s", f)
	}
	assert.Empty(t, e.srv.Faults())
	allowed := []fault.Fault{
		{Method: "POST", Path: cmd, Status: 500, AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 422, Code: "invalid_request", AfterHandler: true},
		{Method: "POST", Path: cmd, Status: 429},
		{Method: "POST", Path: cmd, Status: 410},
		{Method: "POST", Path: cmd, Expire: true, AfterHandler: true},
	}
	for _, f := range allowed {
		assert.NoError(t, f.Validate(), "%s", f)
	}
}

func TestFaultProbabilityIsSeeded(t *testing.T) {
	t.Parallel()
	pattern := func(seed uint64) string {
		e := newFaultEnv(t, local.WithSeed(seed))
		h := e.srv.Inject(fault.Fault{Status: 503, Probability: 0.5})
		var b strings.Builder
		for range 40 {
			status, _, _ := e.call("GET", "/v2/sandboxes/x", nil)
			b.WriteString(map[bool]string{true: "F", false: "."}[status == 503])
		}
		assert.Equal(t, strings.Count(b.String(), "F"), h.Hits())
		return b.String()
	}
	a, b := pattern(7), pattern(7)
	assert.Equal(t, a, b, "the same seed gives the same faults")
	assert.Contains(t, a, "F")
	assert.Contains(t, a, ".")
	assert.NotEqual(t, a, pattern(8), "another seed, other faults")
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	e.srv.Inject(fault.Fault{Path: "/v2/sandboxes/slow", Latency: 300 * time.Millisecond})
	start := time.Now()
	status, _, _ := e.call("GET", "/v2/sandboxes/slow", nil)
	assert.Equal(t, 404, status, "the real handler answers after the delay")
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	// A client that gives up ends the wait.
	e.srv.Inject(fault.Fault{Path: "/v2/sandboxes/stuck", Latency: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := e.do(ctx, "GET", "/v2/sandboxes/stuck", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return lastRequest(t, e.srv).Status == 0 && len(e.srv.Requests()) == 2 }, 5*time.Second, 10*time.Millisecond)
}

// isCut reports whether err is how a client sees a cut connection.
func isCut(err error) bool {
	return err != nil && !errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func TestFaultResetBeforeHeaders(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Reset: fault.ResetBeforeHeaders, Times: 1})
	_, err := e.do(t.Context(), "POST", "/v2/sandboxes/sessions/"+sid+"/cmd", map[string]any{"command": "job"})
	require.Error(t, err)
	assert.True(t, isCut(err) || strings.Contains(err.Error(), "EOF"), "%v", err)
	assert.Zero(t, e.srv.CommandCount())
	r := lastRequest(t, e.srv)
	assert.Zero(t, r.Status, "no answer was sent")
	assert.Contains(t, r.Fault, "reset=before")
}

func TestFaultResetMidStream(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Reset: fault.ResetAfterHeaders, AfterFrames: 2})
	resp := e.runAttached(t.Context(), sid)
	data, err := io.ReadAll(resp.Body)
	require.Error(t, err, "the stream does not end cleanly")
	assert.True(t, isCut(err), "%v", err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 2, "%q", data)
	assert.Contains(t, lines[0], `"command"`)
	assert.JSONEq(t, `{"stream":"stdout","data":"one\n"}`, lines[1])
	assert.Equal(t, 1, e.srv.CommandCount())
	assert.Equal(t, 200, lastRequest(t, e.srv).Status)
}

func TestFaultResetMidJSONBody(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	e.session()
	name := e.srv.Sandboxes()[0].Name
	for _, f := range []fault.Fault{
		{Path: "/v2/sandboxes/*", Reset: fault.ResetAfterHeaders, Times: 1},              // the real answer
		{Path: "/v2/sandboxes/*", Status: 503, Reset: fault.ResetAfterHeaders, Times: 1}, // the fault's
	} {
		h := e.srv.Inject(f)
		resp, err := e.do(t.Context(), "GET", "/v2/sandboxes/"+name, nil)
		require.NoError(t, err, "the headers arrive")
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.True(t, isCut(err), "%v", err)
		assert.NotEmpty(t, data, "part of the body arrives")
		assert.False(t, json.Valid(data))
		assert.Equal(t, 1, h.Hits())
	}
}

func TestFaultCutAfterFrames(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t)
			sid := e.session()
			e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Cut: true, AfterFrames: n})
			resp := e.runAttached(t.Context(), sid)
			data, err := io.ReadAll(resp.Body)
			require.NoError(t, err, "a cut stream ends cleanly")
			assert.Equal(t, n, bytes.Count(data, []byte("\n")), "%q", data)
			assert.NotContains(t, string(data), `"exitCode":0`, "no final frame")
			assert.Equal(t, 1, e.srv.CommandCount())
		})
	}
}

func TestFaultStall(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	const stall = 300 * time.Millisecond
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Stall: stall, AfterFrames: 2, Times: 1})
	resp := e.runAttached(t.Context(), sid)
	br := bufio.NewReader(resp.Body)
	for range 2 {
		_, err := br.ReadString('\n')
		require.NoError(t, err)
	}
	start := time.Now()
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), stall-20*time.Millisecond, "the body stalled")
	assert.Equal(t, 3, bytes.Count(rest, []byte("\n")), "then the stream went on: %q", rest)
	assert.Contains(t, string(rest), `"exitCode":0`)
}

func TestFaultStallEndsOnClose(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Stall: time.Hour, AfterFrames: 1})
	resp := e.runAttached(t.Context(), sid)
	_, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() { e.srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the stall")
	}
}

func TestFaultExpire(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	sid := e.session()
	cmdPath := "/v2/sandboxes/sessions/" + sid + "/cmd"
	body := map[string]any{"command": "echo", "args": []string{"hi"}}

	// After the handler: this call succeeds, the next one finds the session gone.
	h := e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Expire: true, AfterHandler: true, Times: 1})
	status, _, _ := e.call("POST", cmdPath, body)
	assert.Equal(t, 200, status)
	assert.Equal(t, 1, h.Hits())
	status, _, data := e.call("POST", cmdPath, body)
	assert.Equal(t, 410, status)
	code, _ := errorBody(t, data)
	assert.Equal(t, "sandbox_stopped", code)
	assert.Equal(t, 1, e.srv.CommandCount())

	// Before the handler, by sandbox name: the call itself gets the 410.
	c := e.srv.Client()
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "doomed"})
	require.NoError(t, err)
	e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/doomed", Expire: true, Times: 1})
	status, _, _ = e.call("GET", "/v2/sandboxes/doomed", nil)
	assert.Equal(t, 200, status, "a sandbox read is not refused")
	st, ok := e.srv.Session(sb.SessionID())
	require.True(t, ok)
	assert.Equal(t, "stopped", st.Status)
}

func TestFaultRateLimit(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	f := fault.RateLimit(2, time.Minute)
	f.Method = "GET"
	h := e.srv.Inject(f)
	for range 2 {
		status, hdr, body := e.call("GET", "/v2/sandboxes/a", nil)
		assert.Equal(t, 429, status)
		assert.Equal(t, "60", hdr.Get("Retry-After"))
		code, _ := errorBody(t, body)
		assert.Equal(t, "rate_limited", code)
	}
	status, _, _ := e.call("GET", "/v2/sandboxes/a", nil)
	assert.Equal(t, 404, status)
	assert.Equal(t, 2, h.Hits())

	_, err := e.srv.Client().Get(t.Context(), "a")
	require.ErrorIs(t, err, sandbox.ErrNotFound, "the burst is over")
}

func TestFaultMalformedBody(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	e.srv.Inject(fault.Fault{Method: "GET", Path: "/v2/sandboxes/*", Body: `{"sandbox": {"name": `, Times: 1})
	status, hdr, body := e.call("GET", "/v2/sandboxes/any", nil)
	assert.Equal(t, 200, status)
	assert.Equal(t, "application/json; charset=utf-8", hdr.Get("Content-Type"))
	assert.Equal(t, `{"sandbox": {"name": `, string(body))
}

func TestFaultRemoveAndClear(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	a := e.srv.Inject(fault.Fault{Status: 503})
	b := e.srv.Inject(fault.Fault{Status: 502})
	assert.Len(t, e.srv.Faults(), 2)
	status, _, _ := e.call("GET", "/v2/sandboxes/x", nil)
	assert.Equal(t, 503, status, "the first injected fault wins")
	a.Remove()
	a.Remove()
	status, _, _ = e.call("GET", "/v2/sandboxes/x", nil)
	assert.Equal(t, 502, status)
	e.srv.ClearFaults()
	status, _, _ = e.call("GET", "/v2/sandboxes/x", nil)
	assert.Equal(t, 404, status)
	assert.Equal(t, 1, a.Hits())
	assert.Equal(t, 1, b.Hits())
	assert.Empty(t, e.srv.Faults())
}

func TestFaultConcurrentTimes(t *testing.T) {
	t.Parallel()
	e := newFaultEnv(t)
	h := e.srv.Inject(fault.Fault{Status: 503, Times: 30})
	var mu sync.Mutex
	faulted := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				resp, err := e.do(context.Background(), "GET", "/v2/sandboxes/x", nil)
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 503 {
					mu.Lock()
					faulted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 30, faulted)
	assert.Equal(t, 30, h.Hits())
	n := 0
	for _, r := range e.srv.Requests() {
		if r.Fault != "" {
			assert.Equal(t, 503, r.Status)
			n++
		}
	}
	assert.Equal(t, 30, n)
}

func TestInjectPanicsOnInvalidFault(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	assert.PanicsWithError(t, "fault: invalid fault: the fault does nothing: set a status, body, reset, cut, stall, latency, expire or expire-token", func() {
		srv.Inject(fault.Fault{Path: "/v2/sandboxes"})
	})
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	ok := []struct {
		text string
		want fault.Fault
	}{
		{"POST /v2/sandboxes/sessions/*/cmd status=500 times=1",
			fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 500, Times: 1}},
		{"/v2/sandboxes/** status=503", fault.Fault{Path: "/v2/sandboxes/**", Status: 503}},
		{"* * status=429 retry-after=60", fault.Fault{Status: 429, RetryAfter: time.Minute}},
		{"status=429 retry-after=1500ms", fault.Fault{Status: 429, RetryAfter: 1500 * time.Millisecond}},
		{`get /x status=418 code=teapot message="I'm a \"teapot\"" p=0.25`,
			fault.Fault{Method: "GET", Path: "/x", Status: 418, Code: "teapot", Message: `I'm a "teapot"`, Probability: 0.25}},
		{"POST /cmd cut=2", fault.Fault{Method: "POST", Path: "/cmd", Cut: true, AfterFrames: 2}},
		{"POST /cmd cut", fault.Fault{Method: "POST", Path: "/cmd", Cut: true}},
		{"POST /cmd stall=5s after-frames=1", fault.Fault{Method: "POST", Path: "/cmd", Stall: 5 * time.Second, AfterFrames: 1}},
		{"POST /cmd reset=after after-frames=3", fault.Fault{Method: "POST", Path: "/cmd", Reset: fault.ResetAfterHeaders, AfterFrames: 3}},
		{"GET /a reset=before latency=10ms", fault.Fault{Method: "GET", Path: "/a", Reset: fault.ResetBeforeHeaders, Latency: 10 * time.Millisecond}},
		{"POST /cmd status=500 after-handler", fault.Fault{Method: "POST", Path: "/cmd", Status: 500, AfterHandler: true}},
		{"POST /cmd expire=true", fault.Fault{Method: "POST", Path: "/cmd", Expire: true}},
		{`GET /a body="{\"x\":" content-type=text/plain`, fault.Fault{Method: "GET", Path: "/a", Body: `{"x":`, ContentType: "text/plain"}},
	}
	for _, tc := range ok {
		f, err := fault.Parse(tc.text)
		require.NoError(t, err, tc.text)
		assert.Empty(t, cmp.Diff(tc.want, f), tc.text)
		again, err := fault.Parse(f.String())
		require.NoError(t, err, f.String())
		assert.Empty(t, cmp.Diff(f, again), "round trip of %q", f.String())
	}

	bad := []struct{ text, msg string }{
		{"", "empty fault"},
		{"GET /a", "does nothing"},
		{"GET /a status=abc", "not a whole number"},
		{"GET /a status=99", "not in 200..599"},
		{"GET /a bogus=1", `unknown key "bogus"`},
		{"GET /a status=500 status=502", "given twice"},
		{"GET /a status", "needs a value"},
		{`GET /a status=500 message="open`, "unterminated"},
		{"GET /a status=500 p=2", "probability"},
		{"GET /a latency=5", "not a duration"},
		{"GET /a reset=sideways", "want before or after"},
		{"GET /a status=500 cut=1", "cannot be combined"},
		{"GET /a stall=1s after-handler", "cannot be combined with after-handler"},
		{"GET a status=500", `"a" needs a value`},
		{"GET /a[ status=500", "bad pattern"},
		{"GET /a code=x", "need a status"},
		{"GET /a status=500 reset=before", "reset=before sends no answer"},
		{"GET /a after-handler", "after-handler needs"},
		{"G(T /a status=500", "not an HTTP method"},
	}
	for _, tc := range bad {
		_, err := fault.Parse(tc.text)
		require.ErrorIs(t, err, fault.ErrInvalid, tc.text)
		assert.Contains(t, err.Error(), tc.msg, tc.text)
	}
}

func FuzzParseFault(f *testing.F) {
	f.Add("POST /v2/sandboxes/sessions/*/cmd status=500 times=1")
	f.Add(`* * status=429 retry-after=60 message="slow down"`)
	f.Add("GET /a cut=2 latency=1ms p=0.5")
	f.Add("POST /cmd expire-token after-handler times=1")
	f.Add(`GET /a body="{\"x\":" content-type=text/plain`)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := fault.Parse(text)
		if err != nil {
			require.ErrorIs(t, err, fault.ErrInvalid)
			return
		}
		again, err := fault.Parse(got.String())
		require.NoError(t, err, "String of %q is %q", text, got.String())
		require.Empty(t, cmp.Diff(got, again))
	})
}

func TestFaultJSON(t *testing.T) {
	t.Parallel()
	f := fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 503, RetryAfter: time.Minute,
		Latency: 20 * time.Millisecond, Reset: fault.ResetAfterHeaders, Times: 2, Probability: 0.5, AfterHandler: true}
	data, err := json.Marshal(f)
	require.NoError(t, err)
	assert.JSONEq(t, `{"method":"POST","path":"/v2/sandboxes/sessions/*/cmd","status":503,"retryAfter":"1m0s",
		"times":2,"probability":0.5,"latency":"20ms","reset":"after","afterHandler":true}`, string(data))
	var back fault.Fault
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Empty(t, cmp.Diff(f, back))

	require.NoError(t, json.Unmarshal([]byte(`{"status":429,"retryAfter":60,"stall":"1s"}`), &back))
	assert.Equal(t, time.Minute, back.RetryAfter, "a number is seconds")
	assert.Equal(t, time.Second, back.Stall)

	err = json.Unmarshal([]byte(`{"status":500,"tiems":1}`), &back)
	require.ErrorIs(t, err, fault.ErrInvalid)
	assert.Contains(t, err.Error(), "tiems")
	require.ErrorIs(t, json.Unmarshal([]byte(`{"reset":"never"}`), &back), fault.ErrInvalid)
}
