package cassette_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// Values that must never reach a cassette file.
const (
	canaryToken   = "canary-token-7f3e9a1c55d2"
	canaryTeam    = "team_canaryTeam4242"
	canaryProject = "prj_canaryProject4242"
	canaryEnv     = "canary-env-secret-91b0"
	canaryJWT     = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjYW5hcnkifQ.c2lnbmF0dXJlY2FuYXJ5"
)

// transcript is what the scenario observed, minus the ids a replay makes up.
type transcript struct {
	Run          string
	RunExit      int
	FailExit     int
	FailStderr   string
	Env          string
	Detached     string
	DetachedExit int
	File         string
	Stopped      string
	Resumed      string
}

func fixedClock() func() time.Time {
	t0 := time.UnixMilli(1767000000000)
	return func() time.Time { return t0 }
}

// newFake starts a fake with scripted commands for the scenario.
func newFake(t *testing.T, opts ...local.Option) *sandboxtest.Server {
	t.Helper()
	srv := sandboxtest.NewServer(t, append([]local.Option{local.WithSeed(7)}, opts...)...)
	srv.Script().
		Handle(sandboxtest.MatchName("build"), sandboxtest.Steps{}.Stdout("compiling\n").Stderr("warning: slow\n").Stdout("done {{not a placeholder}}\n").Exit(0)).
		Handle(sandboxtest.MatchName("fail"), sandboxtest.Reply{Stderr: "boom\n", ExitCode: 3}).
		Handle(sandboxtest.MatchName("env"), sandboxtest.EnvHandler()).
		Handle(sandboxtest.MatchName("serve"), sandboxtest.Steps{}.Stdout("listening\n").Stdout("bye\n").Exit(0)).
		Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	return srv
}

// scenario creates a sandbox without a name, writes a file, runs attached
// and detached commands, reads the file back, stops the sandbox and runs
// once more (which resumes it).
func scenario(t *testing.T, client *sandbox.Client) transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tr transcript

	sb, err := client.Create(ctx, sandbox.CreateParams{Runtime: "node24", Env: map[string]string{"API_TOKEN": canaryEnv}})
	require.NoError(t, err)
	require.NoError(t, sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("hello.txt", []byte("hi there\n")),
		files.FromBytes("bin/data", []byte{0, 1, 2, 3}),
	}, files.WriteParams{}))

	var out bytes.Buffer
	cmd := sb.Command("build", "--jwt", canaryJWT)
	cmd.Stdout = &out
	cmd.Stderr = &out
	res, err := cmd.Run(ctx)
	require.NoError(t, err)
	tr.Run, tr.RunExit = out.String(), res.ExitCode()

	_, err = sb.Command("fail").Run(ctx)
	var exitErr *command.ExitError
	require.ErrorAs(t, err, &exitErr)
	tr.FailExit, tr.FailStderr = exitErr.ExitCode(), string(exitErr.Stderr)

	cmd2 := sb.Command("env")
	cmd2.Env = map[string]string{"PLAIN": "visible"}
	envOut, err := cmd2.Output(ctx)
	require.NoError(t, err)
	tr.Env = string(envOut)

	h, err := sb.Command("serve").Start(ctx)
	require.NoError(t, err)
	wres, err := h.Wait(ctx)
	require.NoError(t, err)
	stdout, err := h.Output(ctx)
	require.NoError(t, err)
	tr.Detached, tr.DetachedExit = string(stdout), wres.ExitCode()

	data, err := sb.FS().ReadFile(ctx, "hello.txt")
	require.NoError(t, err)
	tr.File = string(data)

	st, err := sb.Stop(ctx)
	require.NoError(t, err)
	tr.Stopped = string(st.Session.Status)

	// The session is stopped: this run gets 410, resumes, and runs again.
	again, err := sb.Command("echo", "again").Output(ctx)
	require.NoError(t, err)
	tr.Resumed = string(again)
	_, err = sb.Stop(ctx)
	require.NoError(t, err)
	return tr
}

// record runs the scenario against a fresh fake through a recording cassette.
func record(t *testing.T, path string, opts ...cassette.Option) transcript {
	t.Helper()
	srv := newFake(t, local.WithClock(fixedClock()))
	c, err := cassette.Open(path, cassette.Record, opts...)
	require.NoError(t, err)
	client := srv.Client(
		sandbox.WithToken(canaryToken), sandbox.WithTeam(canaryTeam), sandbox.WithProject(canaryProject),
		sandbox.WithTransport(c.Transport(nil)),
	)
	tr := scenario(t, client)
	require.NoError(t, c.Close())
	return tr
}

// replayClient returns a client that can only reach the cassette.
func replayClient(t *testing.T, c *cassette.Cassette, opts ...sandbox.Option) *sandbox.Client {
	t.Helper()
	client, err := sandbox.NewClient(append([]sandbox.Option{
		sandbox.WithToken("replay-token"), sandbox.WithTeam("team_other"), sandbox.WithProject("prj_other"),
		sandbox.WithTransport(c.Transport(nil)),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
	}, opts...)...)
	require.NoError(t, err)
	return client
}

func TestRecordThenReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scenario.cassette")
	want := record(t, path)
	assert.Equal(t, "compiling\nwarning: slow\ndone {{not a placeholder}}\n", want.Run)
	assert.Equal(t, 3, want.FailExit)
	assert.Contains(t, want.Env, "PLAIN=visible\n")
	assert.Equal(t, "again\n", want.Resumed)

	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	got := scenario(t, replayClient(t, c))
	// Secrets the commands printed are redacted in the recording.
	want.Env = strings.ReplaceAll(want.Env, canaryEnv, "REDACTED")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("replay differs from the recording (-recorded +replayed):\n%s", diff)
	}
	assert.Empty(t, c.Misses())
	assert.Zero(t, c.Remaining(), "every recorded interaction is replayed")
}

func TestReplayGivesMadeUpIDsConsistently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ids.cassette")
	record(t, path)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(raw)
	for _, ph := range []string{"{{session:1}}", "{{session:2}}", "{{command:1}}", "{{name:1}}", "{{team}}", "{{project}}", "{{request}}", "{{time:+0}}", "{{lb}}", "{{jwt}}", "{{secret}}"} {
		assert.Contains(t, s, ph)
	}
	assert.NotRegexp(t, `sbx_[A-Za-z0-9]{28}`, s)
	assert.NotRegexp(t, `cmd_[A-Za-z0-9]{28}`, s)

	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	client := replayClient(t, c)
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Runtime: "node24", Env: map[string]string{"API_TOKEN": "another-secret"}})
	require.NoError(t, err)
	assert.Regexp(t, `^sbx-[0-9a-f]{16}$`, sb.Name(), "the name the client gave")
	assert.Equal(t, "sbx_replay0000000000000000000001", sb.SessionID())
	// Timestamps are made relative to the time the replay was opened.
	assert.WithinDuration(t, time.Now(), sb.Info().CreatedAt, time.Minute)
}

func TestRerecordIsByteIdentical(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.cassette"), filepath.Join(dir, "b.cassette")
	// Frame offsets are real time; a coarse resolution keeps a slow moment
	// of a loaded machine out of the file.
	record(t, a, cassette.WithResolution(time.Second))
	record(t, b, cassette.WithResolution(time.Second))
	ra, err := os.ReadFile(a)
	require.NoError(t, err)
	rb, err := os.ReadFile(b)
	require.NoError(t, err)
	if !bytes.Equal(ra, rb) {
		t.Fatalf("two recordings differ:\n%s", cmp.Diff(string(ra), string(rb)))
	}
	// No temporary files are left beside the cassettes.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2)
}

func TestSecretsNeverWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.cassette")
	srv := newFake(t)
	c, err := cassette.Open(path, cassette.Record, cassette.WithRedact("explicit-secret-value"))
	require.NoError(t, err)
	client := srv.Client(sandbox.WithToken(canaryToken), sandbox.WithTeam(canaryTeam), sandbox.WithProject(canaryProject), sandbox.WithTransport(c.Transport(nil)))
	scenario(t, client)
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "plain-name"})
	require.NoError(t, err)
	// Secrets echoed in output are redacted too.
	_, err = sb.Command("echo", canaryToken, "explicit-secret-value", canaryJWT).Output(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, secret := range []string{canaryToken, canaryTeam, canaryProject, canaryEnv, canaryJWT, "explicit-secret-value", "Bearer", srv.Token()} {
		assert.NotContains(t, string(raw), secret)
	}
	assert.Contains(t, string(raw), "plain-name", "names the test chose stay readable")
}

func TestStreamIsNotHeldBack(t *testing.T) {
	release := make(chan struct{})
	srv := newFake(t)
	srv.Script().Override(sandboxtest.MatchName("slow"), sandboxtest.Steps{}.Stdout("first\n").Await(release).Stdout("second\n").Exit(0))
	c, err := cassette.Open(filepath.Join(t.TempDir(), "stream.cassette"), cassette.Record)
	require.NoError(t, err)
	client := srv.Client(sandbox.WithTransport(c.Transport(nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "stream"})
	require.NoError(t, err)

	// The command goes on only after the caller saw its first frame: if the
	// recorder held the stream back, this would run into the timeout.
	var once sync.Once
	seen := func(p []byte) {
		if strings.Contains(string(p), "first") {
			once.Do(func() { close(release) })
		}
	}
	cmd := sb.Command("slow")
	cmd.Stdout = writerFunc(seen)
	res, err := cmd.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	assert.Equal(t, "first\nsecond\n", string(res.Stdout))
	require.NoError(t, c.Close())

	raw, err := os.ReadFile(c.Path())
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	var frames []string
	for _, l := range lines {
		if strings.Contains(l, `"frame":`) {
			frames = append(frames, l)
		}
	}
	require.Len(t, frames, 4, "started, two output frames, finished")
	assert.Contains(t, frames[1], `"data":"first\n"`)
	assert.Contains(t, frames[2], `"data":"second\n"`)
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

func TestUnmatchedRequestShowsDiff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "diff.cassette")
	record(t, path)
	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	client := replayClient(t, c)
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Runtime: "node24", Env: map[string]string{"API_TOKEN": "x-secret-value"}})
	require.NoError(t, err)
	_, err = sb.Command("build", "--jwt", "--other").Run(ctx)
	require.Error(t, err)
	require.ErrorIs(t, err, cassette.ErrNoMatch)
	var mm *cassette.MismatchError
	require.ErrorAs(t, err, &mm)
	assert.Contains(t, mm.Diff, `-     "{{jwt}}"`)
	assert.Contains(t, mm.Diff, `+     "--other"`)
	assert.Contains(t, mm.Diff, "  POST /v2/sandboxes/sessions/sbx_replay0000000000000000000001/cmd"[:0]+"  POST /v2/sandboxes/sessions/{{session:1}}/cmd")
	assert.Contains(t, err.Error(), "closest recorded request")
	assert.Len(t, c.Misses(), 1)
}

func TestServerReplayWithSandboxClient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.cassette")
	want := record(t, path)
	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	srv := cassette.NewServer(c)
	defer srv.Close()
	client, err := sandbox.NewClient(
		sandbox.WithBaseURL(srv.URL()+"/api"),
		sandbox.WithToken("replay-token"), sandbox.WithTeam("team_other"), sandbox.WithProject("prj_other"),
	)
	require.NoError(t, err)
	got := scenario(t, client)
	want.Env = strings.ReplaceAll(want.Env, canaryEnv, "REDACTED")
	assert.Equal(t, want, got)
	assert.Empty(t, c.Misses())
}

// rawRecording records plain HTTP requests against the fake: create a
// sandbox, then run a command attached (an NDJSON stream).
func rawRecording(t *testing.T, path string) {
	t.Helper()
	srv := newFake(t)
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	hc := &http.Client{Transport: c.Transport(nil)}
	sid := rawScenario(t, hc, srv.URL(), srv.Token())
	assert.True(t, strings.HasPrefix(sid, "sbx_"))
	require.NoError(t, c.Close())
}

// rawScenario creates a sandbox and runs echo in it over plain HTTP; it
// returns the session id and checks the NDJSON stream frame by frame.
func rawScenario(t *testing.T, hc *http.Client, base, token string) string {
	t.Helper()
	do := func(method, path, body string) *http.Response {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp := do("POST", "/v2/sandboxes?teamId=team_raw", `{"projectId":"prj_raw","runtime":"node24","ports":[]}`)
	var created struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
	}
	require.Equal(t, 200, resp.StatusCode)
	require.NoError(t, jsonDecode(resp.Body, &created))
	resp.Body.Close()
	sid := created.Session.ID

	resp = do("POST", "/v2/sandboxes/sessions/"+sid+"/cmd?teamId=team_raw", `{"command":"echo","args":["hi"],"env":{},"sudo":false,"wait":true,"logs":true}`)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Contains(t, lines[0], `"exitCode":null`)
	assert.Contains(t, lines[0], sid)
	assert.JSONEq(t, `{"stream":"stdout","data":"hi\n"}`, lines[1])
	assert.Contains(t, lines[2], `"exitCode":0`)
	return sid
}

func TestServerReplayWithPlainHTTP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw.cassette")
	rawRecording(t, path)
	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	srv := cassette.NewServer(c)
	defer srv.Close()
	sid := rawScenario(t, http.DefaultClient, srv.URL(), "any-token")
	assert.Equal(t, "sbx_replay0000000000000000000001", sid)

	// An unmatched request gets a 500 with the diff as text.
	req, err := http.NewRequest("POST", srv.URL()+"/v2/sandboxes/sessions/"+sid+"/cmd?teamId=team_raw", strings.NewReader(`{"command":"echo","args":["bye"]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, string(text), "no recorded interaction matches POST")
	assert.Contains(t, string(text), `+     "bye"`)
	assert.Contains(t, string(text), `-     "hi"`)
}

func TestServerReplayKeepsFrameBoundaries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "frames.cassette")
	rawRecording(t, path)
	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	srv := cassette.NewServer(c)
	defer srv.Close()
	// Replay through the transport: each Read returns at most one frame.
	hc := &http.Client{Transport: c.Transport(nil)}
	req, _ := http.NewRequest("POST", "http://replay.test/v2/sandboxes?teamId=t", strings.NewReader(`{"projectId":"p","runtime":"node24","ports":[]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	req, _ = http.NewRequest("POST", "http://replay.test/v2/sandboxes/sessions/sbx_replay0000000000000000000001/cmd?teamId=t", strings.NewReader(`{"command":"echo","args":["hi"],"env":{},"sudo":false,"wait":true,"logs":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	var reads []string
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			reads = append(reads, string(buf[:n]))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
	}
	require.Len(t, reads, 3)
	for _, r := range reads {
		assert.True(t, strings.HasSuffix(r, "\n") && strings.Count(r, "\n") == 1, "one frame per read: %q", r)
	}
}

func TestReplayTiming(t *testing.T) {
	const gap = 600 * time.Millisecond
	path := filepath.Join(t.TempDir(), "timing.cassette")
	srv := newFake(t)
	srv.Script().Override(sandboxtest.MatchName("tick"), sandboxtest.Steps{}.Stdout("a\n").Sleep(gap).Stdout("b\n").Exit(0))
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	client := srv.Client(sandbox.WithTransport(c.Transport(nil)))
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "timing"})
	require.NoError(t, err)
	_, err = sb.Command("tick").Run(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	// gapBetween replays the run and measures the time between the frames.
	gapBetween := func(opts ...cassette.Option) time.Duration {
		c, err := cassette.Open(path, cassette.Replay, opts...)
		require.NoError(t, err)
		defer c.Close()
		client := replayClient(t, c)
		sb, err := client.Create(ctx, sandbox.CreateParams{Name: "timing"})
		require.NoError(t, err)
		var times []time.Time
		cmd := sb.Command("tick")
		cmd.Stdout = writerFunc(func([]byte) { times = append(times, time.Now()) })
		_, err = cmd.Run(ctx)
		require.NoError(t, err)
		require.Len(t, times, 2)
		return times[1].Sub(times[0])
	}
	assert.GreaterOrEqual(t, gapBetween(cassette.WithTiming(1)), gap-100*time.Millisecond, "recorded pace")
	assert.Less(t, gapBetween(), gap/2, "fast by default")
}

func TestReplayRecordedStreamCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cut.cassette")
	srv := newFake(t)
	srv.Script().Override(sandboxtest.MatchName("hang"), sandboxtest.Steps{}.Stdout("partial\n").Block())
	c, err := cassette.Open(path, cassette.Record)
	require.NoError(t, err)
	client := srv.Client(sandbox.WithTransport(c.Transport(nil)))
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "cut"})
	require.NoError(t, err)
	h, err := sb.Command("hang").Start(ctx)
	require.NoError(t, err)
	// Read the first log frame, then give up on the stream.
	for ev, err := range h.Logs(ctx) {
		require.NoError(t, err)
		assert.Equal(t, "partial\n", string(ev.Data))
		break
	}
	require.NoError(t, h.Kill(ctx))
	require.NoError(t, c.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"end":"closed"`)

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	client = replayClient(t, c)
	sb, err = client.Create(ctx, sandbox.CreateParams{Name: "cut"})
	require.NoError(t, err)
	h, err = sb.Command("hang").Start(ctx)
	require.NoError(t, err)
	for ev, err := range h.Logs(ctx) {
		require.NoError(t, err)
		assert.Equal(t, "partial\n", string(ev.Data))
		break
	}
	require.NoError(t, h.Kill(ctx))
}

func TestNewUsesEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.cassette")
	t.Setenv(cassette.EnvVar, "replay")
	_, err := cassette.Open(path, mustMode(t))
	require.Error(t, err, "replay needs the file")

	t.Setenv(cassette.EnvVar, "auto")
	ok := t.Run("record", func(t *testing.T) {
		c := cassette.New(t, path)
		assert.Equal(t, cassette.Record, c.Mode())
		srv := newFake(t)
		_, err := srv.Client(sandbox.WithTransport(c.Transport(nil))).Create(context.Background(), sandbox.CreateParams{Name: "env"})
		require.NoError(t, err)
	})
	require.True(t, ok)
	_, err = os.Stat(path)
	require.NoError(t, err, "New saves at the end of the test")
	t.Run("replay", func(t *testing.T) {
		c := cassette.New(t, path)
		assert.Equal(t, cassette.Replay, c.Mode())
		_, err := replayClient(t, c).Create(context.Background(), sandbox.CreateParams{Name: "env"})
		require.NoError(t, err)
	})

	t.Setenv(cassette.EnvVar, "sometimes")
	_, err = cassette.ModeFromEnv(cassette.Replay)
	require.Error(t, err)
}

func mustMode(t *testing.T) cassette.Mode {
	m, err := cassette.ModeFromEnv(cassette.RecordIfMissing)
	require.NoError(t, err)
	return m
}

func TestRecordingProxy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "proxy.cassette")
	fake := newFake(t, local.WithClock(fixedClock()))
	c, err := cassette.Open(path, cassette.Record, cassette.WithUpstream(fake.URL()))
	require.NoError(t, err)
	proxy := cassette.NewServer(c)
	client, err := sandbox.NewClient(
		sandbox.WithBaseURL(proxy.URL()+"/api"),
		sandbox.WithToken(canaryToken), sandbox.WithTeam(canaryTeam), sandbox.WithProject(canaryProject),
	)
	require.NoError(t, err)
	want := scenario(t, client)
	proxy.Close()
	require.NoError(t, c.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), canaryToken)
	assert.NotContains(t, string(raw), "/api/")

	c, err = cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	got := scenario(t, replayClient(t, c))
	want.Env = strings.ReplaceAll(want.Env, canaryEnv, "REDACTED")
	assert.Equal(t, want, got)
	assert.Zero(t, c.Remaining())
}
