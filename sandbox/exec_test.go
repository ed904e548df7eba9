package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestRunStreamsOutputInOrderBeforeTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("build", sandboxtest.Steps{}.
		Stdout("first\n").
		Await(gate).
		Stdout("second\n").
		Stderr("warning\n").
		Sleep(2*time.Millisecond).
		Stdout("third\n"))
	sb := e.create("stream")

	out := newChunks()
	cmd := sb.Command("build")
	cmd.Stdout, cmd.Stderr = out.writer("stdout"), out.writer("stderr")
	type result struct {
		res *command.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cmd.Run(t.Context())
		done <- result{res, err}
	}()

	// The first chunk reaches the writer while the command is still
	// blocked: it cannot continue until the gate opens.
	waitFor(t, out.first, "the first chunk")
	assert.Equal(t, []chunk{{"stdout", "first\n"}}, out.all())
	cmds := e.srv.Commands()
	require.Len(t, cmds, 1)
	assert.Nil(t, cmds[0].Command.ExitCode, "the command is still running")
	select {
	case r := <-done:
		t.Fatalf("Run returned before the command finished: %+v", r)
	default:
	}
	close(gate)

	r := <-done
	require.NoError(t, r.err)
	want := []chunk{{"stdout", "first\n"}, {"stdout", "second\n"}, {"stderr", "warning\n"}, {"stdout", "third\n"}}
	assert.Empty(t, cmp.Diff(want, out.all(), cmp.AllowUnexported(chunk{})))

	res := r.res
	assert.Equal(t, 0, res.ExitCode())
	assert.True(t, res.Success())
	assert.Equal(t, "first\nsecond\nthird\n", string(res.Stdout))
	assert.Equal(t, "warning\n", string(res.Stderr))
	assert.Equal(t, int64(len("first\nsecond\nthird\n")), res.StdoutBytes)

	info := e.srv.Commands()[0].Command
	assert.Equal(t, info.ID, res.CommandID)
	assert.Equal(t, sb.SessionID(), res.SessionID)
	assert.Equal(t, info.Duration, res.Duration, "the duration the sandbox reported")
	assert.Positive(t, res.Duration)
	assert.False(t, res.StartedAt.IsZero())
}

func TestRunCaptureLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hundred := strings.Repeat("0123456789", 10)
	e.handle("noisy", sandboxtest.Reply{Stdout: hundred, Stderr: "short"})
	sb := e.create("cap")

	var seen bytes.Buffer
	cmd := sb.Command("noisy")
	cmd.CaptureLimit = 10
	cmd.Stdout = &seen
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, hundred[:10], string(res.Stdout))
	assert.Equal(t, int64(100), res.StdoutBytes, "all output is counted")
	assert.True(t, res.StdoutTruncated)
	assert.Equal(t, "short", string(res.Stderr))
	assert.Equal(t, int64(5), res.StderrBytes)
	assert.False(t, res.StderrTruncated)
	assert.Equal(t, hundred, seen.String(), "the writer gets everything")

	cmd = sb.Command("noisy") // a Cmd runs once
	cmd.CaptureLimit = -1
	res, err = cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Empty(t, res.Stdout)
	assert.Equal(t, int64(100), res.StdoutBytes)
	assert.True(t, res.StdoutTruncated)
}

func TestRunNonZeroExit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("fail", sandboxtest.Reply{Stdout: "partial\n", Stderr: "step 1\nboom: disk full\n", ExitCode: 3})
	sb := e.create("exit")

	res, err := sb.Command("fail").Run(t.Context())
	require.Error(t, err)
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode())
	assert.Same(t, res, ee.Result, "the result comes with the error")
	assert.Equal(t, "partial\n", string(res.Stdout))
	assert.Contains(t, err.Error(), "boom: disk full")
	assert.False(t, res.Success())

	out, err := sb.Command("fail").Output(t.Context())
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "partial\n", string(out))

	both, err := sb.Command("fail").CombinedOutput(t.Context())
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "partial\nstep 1\nboom: disk full\n", string(both))
}

// countingWriter counts and hashes what it receives, one Write at a time.
type countingWriter struct {
	mu     sync.Mutex
	writes []int
	h      hash.Hash
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, len(p))
	w.h.Write(p)
	return len(p), nil
}

func TestRunTenMiBLine(t *testing.T) {
	t.Parallel()
	const size = 10 << 20
	line := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz012345"), size/32)
	line[len(line)-1] = '\n'
	want := sha256.Sum256(line)

	e := newEnv(t)
	e.handle("big", sandboxtest.HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		_, _ = cmd.Stdout.Write(line)
		return 0
	}))
	sb := e.create("big")

	w := &countingWriter{h: sha256.New()}
	cmd := sb.Command("big")
	cmd.Stdout = w
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	total := 0
	for _, n := range w.writes {
		require.LessOrEqual(t, n, 128<<10, "the line comes in pieces as it arrives, in bounded memory")
		total += n
	}
	assert.Equal(t, size, total, "the whole line")
	assert.Equal(t, want[:], w.h.Sum(nil))
	assert.Equal(t, int64(size), res.StdoutBytes)
	assert.Len(t, res.Stdout, command.DefaultCaptureLimit)
	assert.True(t, res.StdoutTruncated)
}

func TestRunValidatesBeforeSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("valid")
	before := len(e.srv.Requests())
	echo := func(set func(c *command.Cmd)) *command.Cmd {
		c := sb.Command("echo")
		set(c)
		return c
	}
	cases := map[string]*command.Cmd{
		"nil":              nil,
		"not from Command": {Name: "echo"},
		"empty name":       sb.Command(""),
		"blank name":       sb.Command("  "),
		"NUL in arg":       sb.Command("echo", "a\x00b"),
		"NUL in env":       echo(func(c *command.Cmd) { c.Env = map[string]string{"K": "a\x00"} }),
		"bad env name":     echo(func(c *command.Cmd) { c.Env = map[string]string{"A=B": "x"} }),
		"negative timeout": echo(func(c *command.Cmd) { c.Timeout = -time.Second }),
		"timeout 50ms":     echo(func(c *command.Cmd) { c.Timeout = 50 * time.Millisecond }),
		"negative idle":    echo(func(c *command.Cmd) { c.InactivityTimeout = -time.Second }),
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := cmd.Run(t.Context())
			var ie *sandbox.InputError
			require.ErrorAs(t, err, &ie)
			_, err = cmd.Output(t.Context())
			require.ErrorAs(t, err, &ie)
			_, err = cmd.CombinedOutput(t.Context())
			require.ErrorAs(t, err, &ie)
			_, err = cmd.Start(t.Context())
			require.ErrorAs(t, err, &ie, "a refused command can be mended and run")
		})
	}
	assert.Len(t, e.srv.Requests(), before, "nothing was sent")
	assert.Zero(t, e.srv.CommandCount())
}

func TestRunRequestBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("node", sandboxtest.Reply{})
	sb := e.create("body")

	cmd := sb.Command("node", "app.js", "--port", "3000")
	cmd.Env = map[string]string{"NODE_ENV": "test"}
	cmd.Sudo = true
	cmd.Timeout = 1500 * time.Millisecond
	cmd.Dir = "/srv/app"
	_, err := cmd.Run(t.Context())
	require.NoError(t, err)
	_, err = sb.Command("node").Run(t.Context())
	require.NoError(t, err)
	_, err = sb.Command("node").Start(t.Context())
	require.NoError(t, err)

	reqs := requests(e.srv, http.MethodPost, "/cmd")
	require.Len(t, reqs, 3)
	assert.Empty(t, cmp.Diff(map[string]any{
		"command": "node", "args": []any{"app.js", "--port", "3000"}, "env": map[string]any{"NODE_ENV": "test"},
		"sudo": true, "wait": true, "logs": true, "timeout": 1500.0, "cwd": "/srv/app",
	}, jsonBody(t, reqs[0])), "full body (-want +got)")
	assert.Empty(t, cmp.Diff(map[string]any{
		"command": "node", "args": []any{}, "env": map[string]any{}, "sudo": false, "wait": true, "logs": true,
	}, jsonBody(t, reqs[1])), "defaults (-want +got)")
	assert.Empty(t, cmp.Diff(map[string]any{
		"command": "node", "args": []any{}, "env": map[string]any{}, "sudo": false,
	}, jsonBody(t, reqs[2])), "detached (-want +got)")

	cmds := e.srv.Commands()
	require.Len(t, cmds, 3)
	assert.True(t, cmds[0].Sudo)
	assert.Equal(t, "test", cmds[0].Env["NODE_ENV"])
	assert.Equal(t, "/srv/app", cmds[0].Command.Cwd)
}

func TestRunInactivityTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("agent", sandboxtest.Steps{}.Stdout("thinking\n").Block())
	sb := e.create("idle")

	cmd := sb.Command("agent")
	cmd.InactivityTimeout = 500 * time.Millisecond
	res, err := cmd.Run(ctxTimeout(t, 30*time.Second))
	require.ErrorIs(t, err, command.ErrInactivity)
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie)
	assert.True(t, ie.Killed)
	assert.NoError(t, ie.KillErr)
	assert.Equal(t, 500*time.Millisecond, ie.Silence)
	require.NotNil(t, ie.Result)
	assert.Equal(t, "thinking\n", string(ie.Result.Stdout), "output before the silence is kept")
	assert.Same(t, ie.Result, res, "and returned as the result")

	cmds := e.srv.Commands()
	require.Len(t, cmds, 1)
	assert.Equal(t, ie.CommandID, cmds[0].Command.ID)
	assert.Equal(t, []int{9}, cmds[0].Signals, "killed with SIGKILL")
	require.Eventually(t, func() bool { return commandDone(e.srv, ie.CommandID) }, 10*time.Second, 5*time.Millisecond,
		"the command ended on the server")
	assert.Equal(t, 137, *e.srv.Commands()[0].Command.ExitCode)
}

func TestRunCancelKillsByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("serve", sandboxtest.Steps{}.Stdout("listening\n").Block())
	sb := e.create("cancel")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := newChunks()
	cmd := sb.Command("serve")
	cmd.Stdout = out.writer("stdout")
	go func() {
		<-out.first
		cancel()
	}()
	res, err := cmd.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res, "the output so far travels with the error")
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.Equal(t, "listening\n", string(res.Stdout))

	cmds := e.srv.Commands()
	require.Len(t, cmds, 1)
	id := cmds[0].Command.ID
	require.Eventually(t, func() bool { return commandDone(e.srv, id) }, 10*time.Second, 5*time.Millisecond,
		"the command was killed on the server")
	got := e.srv.Commands()[0]
	assert.Equal(t, []int{9}, got.Signals)
	assert.Equal(t, 137, *got.Command.ExitCode)
}

func TestRunCancelWithDetachOnCancelLeavesCommandRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("serve", sandboxtest.Steps{}.Stdout("listening\n").Block())
	sb := e.create("cancel")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := newChunks()
	cmd := sb.Command("serve")
	cmd.DetachOnCancel = true
	cmd.Stdout = out.writer("stdout")
	go func() {
		<-out.first
		cancel()
	}()
	_, err := cmd.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)

	id := e.srv.Commands()[0].Command.ID
	// Ask the API after Run returned: the command still runs.
	h, err := sb.Attach(id)
	require.NoError(t, err)
	info, err := h.Info(t.Context())
	require.NoError(t, err)
	assert.False(t, info.Done())
	assert.Empty(t, e.srv.Commands()[0].Signals)
	assert.Empty(t, requests(e.srv, http.MethodPost, "/kill"))

	// It can still be killed through a handle.
	require.NoError(t, h.Kill(t.Context()))
	_, err = h.Wait(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 137, ee.ExitCode())
}

func TestRunWriterErrorStopsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("werr")
	cmd := sb.Command("echo", "x")
	boom := errors.New("disk full")
	cmd.Stdout = failingWriter{boom}
	_, err := cmd.Run(t.Context())
	assert.ErrorIs(t, err, boom)
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestRunPerCommandTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("hang", sandboxtest.Steps{}.Block())
	sb := e.create("tmo")
	cmd := sb.Command("hang")
	cmd.Timeout = 100 * time.Millisecond
	res, err := cmd.Run(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 137, res.ExitCode(), "SIGKILL inside the sandbox")
	assert.True(t, e.srv.Commands()[0].TimedOut)
}

func TestStreamsNotCutByClientTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.handle("slow", sandboxtest.Steps{}.Stdout("started\n").Await(gate).Stdout("finished\n"))
	e.create("slow")
	// hc.Timeout bounds plain requests, never streams and waits.
	const limit = 200 * time.Millisecond
	c := e.srv.Client(sandbox.WithHTTPClient(&http.Client{Timeout: limit}))
	sb, err := c.Get(t.Context(), "slow")
	require.NoError(t, err)

	out := newChunks()
	cmd := sb.Command("slow")
	cmd.Stdout = out.writer("stdout")
	go func() {
		<-out.first
		time.Sleep(3 * limit)
		close(gate)
	}()
	res, err := cmd.Run(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "started\nfinished\n", string(res.Stdout))

	gate2 := make(chan struct{})
	e.script.Override(sandboxtest.MatchName("slow"), sandboxtest.Steps{}.Await(gate2).Exit(5))
	h, err := sb.Command("slow").Start(t.Context())
	require.NoError(t, err)
	time.AfterFunc(3*limit, func() { close(gate2) })
	res, err = h.Wait(t.Context())
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 5, res.ExitCode())
}

func TestWaitHonorsContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("forever", sandboxtest.Steps{}.Block())
	sb := e.create("wait")
	cmd := sb.Command("forever")
	cmd.DetachOnCancel = true
	h, err := cmd.Start(t.Context())
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	res, err := h.Wait(ctx)
	assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, sandbox.ErrUnknownResult, "a wait is safe to repeat")

	info, err := h.Info(t.Context())
	require.NoError(t, err)
	assert.False(t, info.Done(), "giving up waiting does not stop the command")
}

func TestEnvIsLayered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("env", sandboxtest.EnvHandler())
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Env: map[string]string{"A": "sandbox", "B": "sandbox"}})
	require.NoError(t, err)
	cmd := sb.Command("env")
	cmd.Env = map[string]string{"B": "command", "C": "command"}
	out, err := cmd.Output(t.Context())
	require.NoError(t, err)
	assert.Contains(t, string(out), "A=sandbox\n")
	assert.Contains(t, string(out), "B=command\n")
	assert.Contains(t, string(out), "C=command\n")
}
