package local_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// fakeExec is the executor of the server tests. The command name selects a
// behaviour:
//
//	echo ARGS…      print the args joined by spaces; exit with $EXIT (default 0)
//	stderr ARGS…    the same on stderr
//	hexout HEX…     write each hex-decoded arg to stdout in its own Write
//	chunks N SIZE   write N frames of SIZE bytes ("x")
//	env             print the environment, sorted, one K=V per line
//	pwd             print Cwd and HostCwd
//	block GATE      print "started\n", wait until GATE is opened, print
//	                "finished\n" and exit 0
//	fail-start      Start fails
//	slow-start GATE Start returns once GATE is opened; the command then
//	                waits for a signal or the session's end
//
// A blocked command that receives a signal exits with 128+signal; when the
// session ends it exits with 137.
type fakeExec struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
}

func newFakeExec() *fakeExec { return &fakeExec{gates: map[string]chan struct{}{}} }

func (e *fakeExec) gate(name string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := e.gates[name]
	if !ok {
		g = make(chan struct{})
		e.gates[name] = g
	}
	return g
}

// open releases every command blocked on gate name.
func (e *fakeExec) open(name string) { close(e.gate(name)) }

type fakeProc struct {
	sig  chan int
	done chan struct{}
	code int
}

func (p *fakeProc) Signal(sig int) error {
	select {
	case <-p.done:
	case p.sig <- sig:
	default:
	}
	return nil
}

func (p *fakeProc) Wait() (int, error) {
	<-p.done
	return p.code, nil
}

func (e *fakeExec) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	if cmd.Name == "fail-start" {
		return nil, errors.New("no such program")
	}
	if cmd.Name == "slow-start" {
		<-e.gate(cmd.Args[0])
	}
	p := &fakeProc{sig: make(chan int, 16), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.code = e.run(ctx, cmd, p.sig)
	}()
	return p, nil
}

func (e *fakeExec) run(ctx context.Context, cmd *local.Cmd, sig <-chan int) int {
	code := 0
	if v, ok := cmd.Env["EXIT"]; ok {
		_, _ = fmt.Sscanf(v, "%d", &code)
	}
	switch cmd.Name {
	case "echo":
		_, _ = io.WriteString(cmd.Stdout, strings.Join(cmd.Args, " ")+"\n")
	case "stderr":
		_, _ = io.WriteString(cmd.Stderr, strings.Join(cmd.Args, " ")+"\n")
	case "hexout":
		for _, a := range cmd.Args {
			b, _ := hex.DecodeString(a)
			_, _ = cmd.Stdout.Write(b)
		}
	case "chunks":
		var n, size int
		_, _ = fmt.Sscanf(cmd.Args[0], "%d", &n)
		_, _ = fmt.Sscanf(cmd.Args[1], "%d", &size)
		for range n {
			_, _ = cmd.Stdout.Write(bytes.Repeat([]byte("x"), size))
		}
	case "env":
		var lines []string
		for k, v := range cmd.Env {
			lines = append(lines, k+"="+v+"\n")
		}
		slices.Sort(lines)
		_, _ = io.WriteString(cmd.Stdout, strings.Join(lines, ""))
	case "pwd":
		_, _ = io.WriteString(cmd.Stdout, cmd.Cwd+"\n"+cmd.HostCwd+"\n")
	case "slow-start":
		select {
		case s := <-sig:
			return 128 + s
		case <-ctx.Done():
			return 128 + 9
		}
	case "block":
		_, _ = io.WriteString(cmd.Stdout, "started\n")
		select {
		case <-e.gate(cmd.Args[0]):
			_, _ = io.WriteString(cmd.Stdout, "finished\n")
			return 0
		case s := <-sig:
			return 128 + s
		case <-ctx.Done():
			return 128 + 9
		}
	default:
		_, _ = io.WriteString(cmd.Stderr, cmd.Name+": command not found\n")
		return 127
	}
	return code
}

// harness drives one fake server over HTTP.
type harness struct {
	t    *testing.T
	srv  *local.Server
	exec *fakeExec
	hc   *http.Client
}

// The harness checks the wire of the friendly mode, frame by frame; the
// hosted differences have tests of their own (hosted_test.go), built with
// newHostedHarness.
func newHarness(t *testing.T, opts ...local.Option) *harness {
	t.Helper()
	return newHostedHarness(t, append([]local.Option{local.WithFriendly()}, opts...)...)
}

// newHostedHarness is newHarness with the server in its default mode,
// which answers as hosted Vercel does.
func newHostedHarness(t *testing.T, opts ...local.Option) *harness {
	t.Helper()
	exec := newFakeExec()
	opts = append([]local.Option{local.WithExecutor(exec)}, opts...)
	srv := sandboxtest.NewServer(t, opts...).Server
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	return &harness{t: t, srv: srv, exec: exec, hc: hc}
}

// request sends method path (query included) with body: nil for none, a
// []byte as it is, anything else as JSON.
func (h *harness) request(ctx context.Context, method, path string, body any, header ...string) *http.Response {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(h.t, err)
		rd = bytes.NewReader(data)
	}
	if !strings.Contains(path, "teamId=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "teamId=team_test"
	}
	req, err := http.NewRequestWithContext(ctx, method, h.srv.URL()+path, rd)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+h.srv.Token())
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.hc.Do(req)
	require.NoError(h.t, err)
	return resp
}

// call sends a request and returns the status and the whole body.
func (h *harness) call(method, path string, body any, header ...string) (int, []byte) {
	h.t.Helper()
	resp := h.request(context.Background(), method, path, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	return resp.StatusCode, data
}

// ok sends a request that must answer 200 with JSON without stray nulls,
// and decodes the answer into out (when not nil).
func (h *harness) ok(method, path string, body, out any, header ...string) []byte {
	h.t.Helper()
	status, data := h.call(method, path, body, header...)
	require.Equal(h.t, http.StatusOK, status, "%s %s: %s", method, path, data)
	assertNoStrayNull(h.t, data)
	if out != nil {
		require.NoError(h.t, json.Unmarshal(data, out), "%s", data)
	}
	return data
}

// fail sends a request that must fail with status and code.
func (h *harness) fail(status int, code, method, path string, body any, header ...string) wire.ErrorDetail {
	h.t.Helper()
	resp := h.request(context.Background(), method, path, body, header...)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(h.t, err)
	require.Equal(h.t, status, resp.StatusCode, "%s %s: %s", method, path, data)
	assert.True(h.t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), resp.Header.Get("Content-Type"))
	var eb struct {
		Error *wire.ErrorDetail `json:"error"`
	}
	require.NoError(h.t, json.Unmarshal(data, &eb), "%s", data)
	require.NotNil(h.t, eb.Error, "%s", data)
	assert.Equal(h.t, code, eb.Error.Code, "%s", data)
	assert.NotEmpty(h.t, eb.Error.Message)
	return *eb.Error
}

// createReply is the answer of create, get and fork.
type createReply struct {
	Sandbox wire.Sandbox `json:"sandbox"`
	Session wire.Session `json:"session"`
	Routes  []wire.Route `json:"routes"`
	Resumed *bool        `json:"resumed"`
}

func (h *harness) create(body map[string]any) createReply {
	h.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if _, ok := body["projectId"]; !ok {
		body["projectId"] = "prj_test"
	}
	if _, ok := body["ports"]; !ok {
		body["ports"] = []int{}
	}
	var r createReply
	h.ok("POST", "/api/v3/sandboxes", body, &r)
	return r
}

func sessPath(sid string, rest ...string) string {
	return "/api/v2/sandboxes/sessions/" + sid + strings.Join(rest, "")
}

// run starts a detached command and returns it.
func (h *harness) run(sid, name string, args ...string) wire.Command {
	h.t.Helper()
	var r wire.CommandResponse
	h.ok("POST", sessPath(sid, "/cmd"), map[string]any{"command": name, "args": args, "env": map[string]string{}, "sudo": false}, &r)
	return r.Command
}

// wait waits for a command through GET …?wait=true.
func (h *harness) wait(sid, cid string) wire.Command {
	h.t.Helper()
	var r wire.CommandResponse
	h.ok("GET", sessPath(sid, "/cmd/", cid, "?wait=true"), nil, &r)
	require.NotNil(h.t, r.Command.ExitCode)
	return r.Command
}

// logs reads the whole logs stream of a command.
func (h *harness) logs(sid, cid string) []logFrame {
	h.t.Helper()
	resp := h.request(context.Background(), "GET", sessPath(sid, "/cmd/", cid, "/logs"), nil)
	defer resp.Body.Close()
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
	require.Equal(h.t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	var frames []logFrame
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			frames = append(frames, h.logFrame(line))
		}
		if err == io.EOF {
			return frames
		}
		require.NoError(h.t, err)
	}
}

// logFrame is one line of a logs stream; an error frame has Stream "error"
// and its code as Data.
type logFrame struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

func (h *harness) logFrame(line []byte) logFrame {
	h.t.Helper()
	var f struct {
		Stream string          `json:"stream"`
		Data   json.RawMessage `json:"data"`
	}
	require.NoError(h.t, json.Unmarshal(line, &f), "%s", line)
	if f.Stream == "error" {
		var ed wire.StreamErrorData
		require.NoError(h.t, json.Unmarshal(f.Data, &ed), "%s", line)
		return logFrame{f.Stream, ed.Code}
	}
	var data string
	require.NoError(h.t, json.Unmarshal(f.Data, &data), "%s", line)
	return logFrame{f.Stream, data}
}

// readLine reads one NDJSON line, failing the test after timeout.
func readLine(t *testing.T, br *bufio.Reader, timeout time.Duration) string {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := br.ReadString('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err, "partial line %q", r.line)
		return r.line
	case <-time.After(timeout):
		t.Fatalf("no NDJSON line within %s", timeout)
		return ""
	}
}

// tarGz builds a gzip-compressed tar archive of regular files, as the
// official SDK does (no directory entries).
func tarGz(t *testing.T, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		typ := f.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: mode, Size: int64(len(f.body)), Typeflag: typ, Linkname: f.link, ModTime: time.Unix(1767000000, 0)}))
		_, err := tw.Write([]byte(f.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

type tarFile struct {
	name string
	body string
	mode int64
	typ  byte
	link string
}

// assertNoStrayNull checks that a JSON document has no null value except
// under the keys exitCode and next, which the API must always send.
func assertNoStrayNull(t *testing.T, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return // not JSON; other assertions deal with it
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case nil:
			key := path[strings.LastIndex(path, ".")+1:]
			assert.Contains(t, []string{"exitCode", "next"}, key, "null at %s in %s", path, data)
		case map[string]any:
			for k, child := range x {
				walk(path+"."+k, child)
			}
		case []any:
			for i, child := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), child)
			}
		}
	}
	walk("$", v)
}

// fakeClock is a settable clock for WithClock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1767000000000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
