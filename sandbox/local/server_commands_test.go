package local_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

const lineTimeout = 5 * time.Second

func TestAttachedCommandExactStream(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	h := newHarness(t, local.WithClock(clock.Now))
	r := h.create(nil)

	resp := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "echo", "args": []string{"hi"}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(body), "\n")
	require.Len(t, lines, 4, "%q", body) // three lines and the empty rest
	assert.Empty(t, lines[3])

	var first wire.CommandResponse
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	id := first.Command.ID
	assert.Regexp(t, `^cmd_[A-Za-z0-9]+$`, id)
	assert.Equal(t, fmt.Sprintf(`{"command":{"id":%q,"name":"echo","args":["hi"],"cwd":"/vercel/sandbox","sessionId":%q,"exitCode":null,"startedAt":1767000000000}}`+"\n", id, r.Session.ID), lines[0])
	assert.Equal(t, `{"stream":"stdout","data":"hi\n"}`+"\n", lines[1])
	assert.Regexp(t, fmt.Sprintf(`^\{"command":\{"id":%q,"name":"echo","args":\["hi"\],"cwd":"/vercel/sandbox","sessionId":%q,"exitCode":0,"startedAt":1767000000000,"durationMs":\d+\}\}`+"\n$", id, r.Session.ID), lines[2])
	assert.Equal(t, 1, h.srv.CommandCount())
}

func TestAttachedWithoutLogs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	resp := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "echo", "args": []string{"hi"}, "env": map[string]string{"EXIT": "3"}, "sudo": false, "wait": true})
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	require.Len(t, lines, 2)
	var last wire.CommandResponse
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &last))
	require.NotNil(t, last.Command.ExitCode)
	assert.Equal(t, 3, *last.Command.ExitCode)
	assert.NotNil(t, last.Command.DurationMs)
}

// The stdout frame must reach the client while the command is still
// running: the command only ends after the client has read it.
func TestAttachedFlushesEveryFrame(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	resp := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "block", "args": []string{"g1"}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
	defer resp.Body.Close()
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)

	assert.Contains(t, readLine(t, br, lineTimeout), `"exitCode":null`)
	assert.Equal(t, `{"stream":"stdout","data":"started\n"}`+"\n", readLine(t, br, lineTimeout))
	h.exec.open("g1")
	assert.Equal(t, `{"stream":"stdout","data":"finished\n"}`+"\n", readLine(t, br, lineTimeout))
	final := readLine(t, br, lineTimeout)
	assert.Contains(t, final, `"exitCode":0`)
	_, err := br.ReadByte()
	assert.Equal(t, io.EOF, err)
}

func TestAttachedClientGoneKeepsCommandRunning(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	ctx, cancel := context.WithCancel(context.Background())
	resp := h.request(ctx, "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "block", "args": []string{"g"}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
	br := bufio.NewReader(resp.Body)
	var first wire.CommandResponse
	require.NoError(t, json.Unmarshal([]byte(readLine(t, br, lineTimeout)), &first))
	cancel()
	resp.Body.Close()

	var now wire.CommandResponse
	h.ok("GET", sessPath(r.Session.ID, "/cmd/", first.Command.ID), nil, &now)
	assert.Nil(t, now.Command.ExitCode, "the command still runs")
	h.exec.open("g")
	assert.Equal(t, 0, *h.wait(r.Session.ID, first.Command.ID).ExitCode)
	stdout, _, err := h.srv.Output(first.Command.ID)
	require.NoError(t, err)
	assert.Equal(t, "started\nfinished\n", stdout)
}

func TestDetachedCommandLogsReplayThenFollow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	c := h.run(r.Session.ID, "block", "g")
	assert.Nil(t, c.ExitCode)
	assert.Equal(t, []string{"g"}, c.Args)

	resp := h.request(context.Background(), "GET", sessPath(r.Session.ID, "/cmd/", c.ID, "/logs"), nil)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)
	assert.Equal(t, `{"stream":"stdout","data":"started\n"}`+"\n", readLine(t, br, lineTimeout))
	h.exec.open("g")
	assert.Equal(t, `{"stream":"stdout","data":"finished\n"}`+"\n", readLine(t, br, lineTimeout))
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Empty(t, rest, "the stream ends at exit and carries no command line")

	// After the exit the whole output is replayed and the stream ends.
	assert.Equal(t, []logFrame{{"stdout", "started\n"}, {"stdout", "finished\n"}}, h.logs(r.Session.ID, c.ID))
	assert.Equal(t, 0, *h.wait(r.Session.ID, c.ID).ExitCode)
}

func TestManyFollowers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	c := h.run(r.Session.ID, "block", "g")
	var wg sync.WaitGroup
	results := make([][]logFrame, 5)
	for i := range results {
		wg.Go(func() { results[i] = h.logs(r.Session.ID, c.ID) })
	}
	// A follower that never reads must not hold anybody up.
	stalled := h.request(context.Background(), "GET", sessPath(r.Session.ID, "/cmd/", c.ID, "/logs"), nil)
	defer stalled.Body.Close()
	h.exec.open("g")
	wg.Wait()
	for _, frames := range results {
		assert.Equal(t, []logFrame{{"stdout", "started\n"}, {"stdout", "finished\n"}}, frames)
	}
}

func TestWaitCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"env": map[string]string{"EXIT": "3"}})
	c := h.run(r.Session.ID, "echo", "x")
	got := h.wait(r.Session.ID, c.ID)
	assert.Equal(t, 3, *got.ExitCode)
	assert.NotNil(t, got.DurationMs)
	assert.Empty(t, cmp.Diff(c, got, cmpopts.IgnoreFields(wire.Command{}, "ExitCode", "DurationMs")))

	blocked := h.run(r.Session.ID, "block", "g")
	var now wire.CommandResponse
	raw := h.ok("GET", sessPath(r.Session.ID, "/cmd/", blocked.ID), nil, &now)
	assert.Contains(t, string(raw), `"exitCode":null`)

	// A waiting client that goes away is let go at once.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	resp := h.request(ctx, "GET", sessPath(r.Session.ID, "/cmd/", blocked.ID, "?wait=true"), nil)
	assert.Equal(t, 200, resp.StatusCode, "status and headers come before the command ends")
	_, err := io.ReadAll(resp.Body)
	assert.Error(t, err)
	resp.Body.Close()

	h.exec.open("g")
	assert.Equal(t, 0, *h.wait(r.Session.ID, blocked.ID).ExitCode)
	h.fail(404, "not_found", "GET", sessPath(r.Session.ID, "/cmd/cmd_nope"), nil)
	h.fail(404, "not_found", "GET", sessPath(r.Session.ID, "/cmd/cmd_nope/logs"), nil)
	h.fail(404, "not_found", "POST", sessPath(r.Session.ID, "/cmd/cmd_nope/kill"), map[string]any{"signal": 9})
}

func TestKillCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	c := h.run(r.Session.ID, "block", "never")
	var killed wire.CommandResponse
	h.ok("POST", sessPath(r.Session.ID, "/cmd/", c.ID, "/kill"), []byte{}, &killed)
	assert.Equal(t, c.ID, killed.Command.ID)
	assert.Equal(t, 143, *h.wait(r.Session.ID, c.ID).ExitCode, "default signal is SIGTERM")

	c2 := h.run(r.Session.ID, "block", "never")
	h.ok("POST", sessPath(r.Session.ID, "/cmd/", c2.ID, "/kill"), map[string]any{"signal": 9}, nil)
	assert.Equal(t, 137, *h.wait(r.Session.ID, c2.ID).ExitCode)
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/cmd/", c2.ID, "/kill"), map[string]any{"signal": 0})

	infos := h.srv.Commands()
	require.Len(t, infos, 2)
	assert.Equal(t, []int{15}, infos[0].Signals)
	assert.Equal(t, []int{9}, infos[1].Signals)
	// Killing a finished command answers its final state.
	h.ok("POST", sessPath(r.Session.ID, "/cmd/", c2.ID, "/kill"), map[string]any{"signal": 9}, &killed)
	assert.Equal(t, 137, *killed.Command.ExitCode)
}

func TestCommandTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	var started wire.CommandResponse
	h.ok("POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"command": "block", "args": []string{"never"}, "env": map[string]string{}, "sudo": false, "timeout": 100}, &started)
	assert.Equal(t, 137, *h.wait(r.Session.ID, started.Command.ID).ExitCode)
	info := h.srv.Commands()[0]
	assert.True(t, info.TimedOut)
	assert.Equal(t, []int{9}, info.Signals)
}

func TestCommandValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"args": []string{}})
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"command": "echo", "timeout": 99})
	h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/cmd"), []byte(`{"command":`))
	assert.Zero(t, h.srv.CommandCount())
}

func TestCommandEnvCwdAndSudo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"env": map[string]string{"A": "1", "B": "2"}})
	var started wire.CommandResponse
	h.ok("POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"command": "env", "args": []string{}, "env": map[string]string{"B": "3", "C": "4"}, "sudo": true}, &started)
	h.wait(r.Session.ID, started.Command.ID)
	stdout, _, err := h.srv.Output(started.Command.ID)
	require.NoError(t, err)
	assert.Equal(t, "A=1\nB=3\nC=4\n", stdout)
	info := h.srv.Commands()[0]
	assert.Equal(t, map[string]string{"A": "1", "B": "3", "C": "4"}, info.Env)
	assert.True(t, info.Sudo)

	h.ok("POST", sessPath(r.Session.ID, "/cmd"), map[string]any{"command": "pwd", "args": []string{}, "env": map[string]string{}, "sudo": false, "cwd": "sub/dir"}, &started)
	assert.Equal(t, "/vercel/sandbox/sub/dir", started.Command.Cwd)
	h.wait(r.Session.ID, started.Command.ID)
	stdout, _, err = h.srv.Output(started.Command.ID)
	require.NoError(t, err)
	host, err := h.srv.HostPath(r.Sandbox.Name, "/vercel/sandbox/sub/dir")
	require.NoError(t, err)
	assert.Equal(t, "/vercel/sandbox/sub/dir\n"+host+"\n", stdout)
}

func TestExecutorStartFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	c := h.run(r.Session.ID, "fail-start")
	assert.Equal(t, 127, *h.wait(r.Session.ID, c.ID).ExitCode)
	assert.Equal(t, []logFrame{{"stderr", "local: cannot start fail-start: no such program\n"}}, h.logs(r.Session.ID, c.ID))

	bare := sandboxtest.NewServer(t, local.WithExecutor(nil)).Server
	hb := &harness{t: t, srv: bare, hc: h.hc}
	rb := hb.create(nil)
	cb := hb.run(rb.Session.ID, "echo", "x")
	assert.Equal(t, 127, *hb.wait(rb.Session.ID, cb.ID).ExitCode, "without an executor commands fail to start")
}

func TestOutputIsValidUTF8(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	// "€" is e2 82 ac: split across writes it must come out whole; 0xff is
	// invalid and becomes U+FFFD; a dangling e2 at exit becomes U+FFFD too.
	c := h.run(r.Session.ID, "hexout", "41e282", "ac42", "ff", "e2")
	h.wait(r.Session.ID, c.ID)
	assert.Equal(t, []logFrame{{"stdout", "A"}, {"stdout", "€B"}, {"stdout", "\uFFFD"}, {"stdout", "\uFFFD"}}, h.logs(r.Session.ID, c.ID))
}

func TestOutputRetentionLimit(t *testing.T) {
	t.Parallel()
	// Room for two writes of 4 bytes, at 64 bytes of overhead each.
	h := newHarness(t, local.WithOutputLimit(2*(4+64)))
	r := h.create(nil)
	c := h.run(r.Session.ID, "chunks", "5", "4")
	h.wait(r.Session.ID, c.ID)
	assert.Equal(t, []logFrame{{"error", "output_evicted"}}, h.logs(r.Session.ID, c.ID),
		"a replay that cannot start at the first byte says so")
	info := h.srv.Commands()[0]
	assert.Equal(t, int64(20), info.OutputBytes)
	assert.Equal(t, int64(3), info.DroppedFrames)
	assert.Equal(t, int64(12), info.DroppedBytes)
}

func TestConcurrentCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(nil)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			resp := h.request(context.Background(), "POST", sessPath(r.Session.ID, "/cmd"),
				map[string]any{"command": "echo", "args": []string{fmt.Sprint(i)}, "env": map[string]string{}, "sudo": false, "wait": true, "logs": true})
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			assert.NoError(t, err)
			assert.Contains(t, string(body), fmt.Sprintf(`{"stream":"stdout","data":"%d\n"}`, i))
		})
	}
	wg.Wait()
	assert.Equal(t, 20, h.srv.CommandCount())
	ids := map[string]bool{}
	for _, c := range h.srv.Commands() {
		ids[c.Command.ID] = true
		assert.Equal(t, 0, *c.Command.ExitCode)
	}
	assert.Len(t, ids, 20)
}

func TestSessionsCommandsAreScoped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	a := h.create(nil)
	b := h.create(nil)
	c := h.run(a.Session.ID, "echo", "x")
	h.fail(http.StatusNotFound, "not_found", "GET", sessPath(b.Session.ID, "/cmd/", c.ID), nil)
}

// A kill that arrives while the executor is still starting the command
// (a client that learned its id from a list, say) is delivered once the
// command has started, not recorded and dropped.
func TestKillDuringStartIsDelivered(t *testing.T) {
	t.Parallel()
	for _, hosted := range []bool{false, true} {
		h := newHarness(t)
		if hosted {
			h = newHostedHarness(t)
		}
		sid := h.create(map[string]any{}).Session.ID
		answered := make(chan int, 1)
		go func() {
			status, _ := h.call("POST", sessPath(sid, "/cmd"), map[string]any{"command": "slow-start", "args": []string{"start"}})
			answered <- status
		}()
		var cid string
		require.Eventually(t, func() bool {
			for _, c := range h.srv.Commands() {
				if c.Command.Name == "slow-start" {
					cid = c.Command.ID
				}
			}
			return cid != ""
		}, 10*time.Second, time.Millisecond, "the command is registered")
		h.ok("POST", sessPath(sid, "/cmd/", cid, "/kill"), map[string]any{"signal": 15}, nil)
		h.exec.open("start")
		require.Equal(t, http.StatusOK, <-answered)
		var code *int
		assert.Eventually(t, func() bool {
			for _, c := range h.srv.Commands() {
				if c.Command.ID == cid {
					code = c.Command.ExitCode
				}
			}
			return code != nil
		}, 10*time.Second, time.Millisecond, "hosted=%v: the SIGTERM reached the command", hosted)
		if code != nil {
			assert.Equal(t, 143, *code, "hosted=%v", hosted)
		}
	}
}
