package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cmd   *command.Cmd
		field string
	}{
		{"nil", nil, "Cmd"},
		{"empty name", &command.Cmd{}, "Cmd.Name"},
		{"blank name", &command.Cmd{Name: "  "}, "Cmd.Name"},
		{"nul in name", &command.Cmd{Name: "a\x00"}, "Cmd.Name"},
		{"nul in arg", &command.Cmd{Name: "ls", Args: []string{"ok", "b\x00d"}}, "Cmd.Args[1]"},
		{"bad env name", &command.Cmd{Name: "ls", Env: map[string]string{"A=B": "x"}}, "Cmd.Env"},
		{"nul in env value", &command.Cmd{Name: "ls", Env: map[string]string{"A": "x\x00"}}, "Cmd.Env[A]"},
		// JSON carries invalid UTF-8 as U+FFFD: another command would run.
		{"invalid UTF-8 in name", &command.Cmd{Name: "ls\xff"}, "Cmd.Name"},
		{"invalid UTF-8 in arg", &command.Cmd{Name: "rm", Args: []string{"--", "u/\xffx"}}, "Cmd.Args[1]"},
		{"invalid UTF-8 in env name", &command.Cmd{Name: "ls", Env: map[string]string{"A\xc3": "x"}}, "Cmd.Env"},
		{"invalid UTF-8 in env value", &command.Cmd{Name: "ls", Env: map[string]string{"A": "\xff"}}, "Cmd.Env[A]"},
		{"invalid UTF-8 in dir", &command.Cmd{Name: "ls", Dir: "/tmp/\xff"}, "Cmd.Dir"},
		{"nul in dir", &command.Cmd{Name: "ls", Dir: "/tmp/\x00"}, "Cmd.Dir"},
		{"negative timeout", &command.Cmd{Name: "ls", Timeout: -time.Second}, "Cmd.Timeout"},
		{"tiny timeout", &command.Cmd{Name: "ls", Timeout: 50 * time.Millisecond}, "Cmd.Timeout"},
		{"negative inactivity", &command.Cmd{Name: "ls", InactivityTimeout: -1}, "Cmd.InactivityTimeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cmd.Validate()
			var ie *apierr.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tc.field, ie.Field)
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)
		})
	}
	assert.NoError(t, (&command.Cmd{Name: "ls", Args: []string{"-la"}, Timeout: 100 * time.Millisecond}).Validate())
}

func TestCmdString(t *testing.T) {
	t.Parallel()
	c := &command.Cmd{Name: "sh", Args: []string{"-c", "echo $HOME", ""}}
	assert.Equal(t, `sh -c "echo $HOME" ""`, c.String())
}

func TestRefRoundTrip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"sbx_1/cmd_2", "my-box/sbx_1/cmd_2"} {
		r, err := command.ParseRef(s)
		require.NoError(t, err)
		assert.Equal(t, s, r.String())
		b, err := r.MarshalText()
		require.NoError(t, err)
		var back command.Ref
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, r, back)
	}
	for _, bad := range []string{"", "x", "a/b/c/d", "/cmd", "sbx/", "sbx 1/cmd"} {
		_, err := command.ParseRef(bad)
		assert.ErrorIs(t, err, apierr.ErrInvalidInput, bad)
	}
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]command.Signal{"SIGTERM": 15, "term": 15, "kill": 9, "9": 9, "SIGHUP": 1, "64": 64} {
		got, err := command.ParseSignal(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "SIGNOPE", "0", "65", "-1"} {
		_, err := command.ParseSignal(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "SIGTERM", command.SIGTERM.String())
	assert.Equal(t, "signal 42", command.Signal(42).String())
}

func TestErrorsText(t *testing.T) {
	t.Parallel()
	ie := &command.InactivityError{CommandID: "cmd_1", Silence: time.Minute, Killed: true}
	assert.ErrorIs(t, ie, command.ErrInactivity)
	assert.Contains(t, ie.Error(), "1m0s")
	assert.False(t, (&command.Result{}).Success(), "a Result whose exit code is not known is no success")
	assert.Equal(t, -1, (&command.Result{}).ExitCode())
	assert.False(t, (*command.Result)(nil).Success())
}

// fakeAPI answers the command endpoints with canned state.
type fakeAPI struct {
	mu      sync.Mutex
	logs    string
	done    bool
	exit    int
	kills   []command.Signal
	running bool // the command never finishes: a wait blocks until ctx ends
	lateEnd bool // the command is reported finished only when waited for
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid, cid := r.PathValue("sid"), r.PathValue("cid")
	switch r.PathValue("op") {
	case "logs":
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, f.logs)
		return
	case "kill":
		var body struct{ Signal int }
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.kills = append(f.kills, command.Signal(body.Signal))
		f.mu.Unlock()
		f.answer(w, sid, cid, nil)
		return
	}
	wait := r.URL.Query().Get("wait") == "true"
	if f.running && wait {
		<-r.Context().Done()
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var exit *int
	if f.done || (wait && (f.lateEnd || !f.running)) {
		code := f.exit
		exit = &code
	}
	f.answer(w, sid, cid, exit)
}

func (f *fakeAPI) answer(w http.ResponseWriter, sid, cid string, exit *int) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"command": map[string]any{
		"id": cid, "sessionId": sid, "name": "x", "args": []string{}, "cwd": "/", "exitCode": exit, "startedAt": 1}})
}

// attach serves f and returns a handle to command cmd_1 of session sbx_1.
func attach(t *testing.T, f *fakeAPI) *command.Handle {
	t.Helper()
	return attachWith(t, f, conn.ReattachPolicy{})
}

// attachWith is attach with a re-attachment policy.
func attachWith(t *testing.T, f *fakeAPI, p conn.ReattachPolicy) *command.Handle {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/v2/sandboxes/sessions/{sid}/cmd/{cid}", f)
	mux.Handle("/v2/sandboxes/sessions/{sid}/cmd/{cid}/{op}", f)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	core, err := httpcore.New(httpcore.Config{BaseURL: srv.URL, Provider: auth.Static(auth.Credentials{Token: "tok", TeamID: "team_1", ProjectID: "prj_1"}),
		Retry: httpcore.RetryPolicy{MaxRetries: -1}})
	require.NoError(t, err)
	h, err := attachCmd(&conn.Conn{Core: core, Reattach: p}, command.Ref{SessionID: "sbx_1", CommandID: "cmd_1"})
	require.NoError(t, err)
	return h
}

func TestHandle(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{done: true, exit: 3,
		logs: `{"stream":"stdout","data":"a\n"}` + "\n" + `{"stream":"stderr","data":"b\n"}` + "\n"}
	h := attach(t, api)
	ctx := context.Background()

	var evs []command.Event
	for ev, err := range h.Logs(ctx) {
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	assert.Equal(t, []command.Event{{Stream: command.Stdout, Data: []byte("a\n")}, {Stream: command.Stderr, Data: []byte("b\n")}}, evs)

	out, err := h.Output(ctx)
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee, "Output reports the exit code as Cmd.Output does")
	assert.Equal(t, "a\n", string(out))
	assert.Equal(t, "b\n", string(ee.Stderr))
	assert.Equal(t, 3, ee.ExitCode())

	res, err := h.Wait(ctx)
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, res.ExitCode())

	require.NoError(t, h.Signal(ctx, command.SIGTERM))
	require.NoError(t, h.Kill(ctx))
	assert.Equal(t, []command.Signal{command.SIGTERM, command.SIGKILL}, api.kills)
	assert.Error(t, h.Signal(ctx, -1))
}

func TestHandleLogsCutWhileRunningWithoutReattach(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{running: true, logs: `{"stream":"stdout","data":"partial"}` + "\n"}
	h := attachWith(t, api, conn.ReattachPolicy{Disabled: true})
	var got error
	for _, err := range h.Logs(context.Background()) {
		if err != nil {
			got = err
		}
	}
	assert.ErrorIs(t, got, apierr.ErrStreamEnded)
}

// A server that closes the log stream just before it records the exit is
// not mistaken for a cut stream.
func TestHandleLogsExitRecordedLate(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{lateEnd: true, logs: `{"stream":"stdout","data":"all"}` + "\n"}
	h := attach(t, api)
	out, err := h.Output(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "all", string(out))
}

func TestHandleLogsErrorFrame(t *testing.T) {
	t.Parallel()
	api := &fakeAPI{done: true, logs: `{"stream":"error","data":{"code":"sandbox_stopped","message":"gone"}}` + "\n"}
	h := attach(t, api)
	_, err := h.Output(context.Background())
	var se *apierr.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "sandbox_stopped", se.Code)
	assert.ErrorIs(t, err, apierr.ErrGone)
}

func TestHandleOutputTruncated(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", command.DefaultCaptureLimit+10)
	api := &fakeAPI{done: true, logs: `{"stream":"stdout","data":"` + big + `"}` + "\n"}
	h := attach(t, api)
	out, err := h.Output(context.Background())
	assert.True(t, errors.Is(err, command.ErrOutputTruncated))
	assert.Len(t, out, command.DefaultCaptureLimit)
}

func TestAttachRejects(t *testing.T) {
	t.Parallel()
	_, err := attachCmd(nil, command.Ref{SessionID: "s", CommandID: "c"})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	core, err := httpcore.New(httpcore.Config{BaseURL: "http://127.0.0.1:1", Provider: auth.Static(auth.Credentials{Token: "tok", TeamID: "t", ProjectID: "p"})})
	require.NoError(t, err)
	_, err = attachCmd(&conn.Conn{Core: core}, command.Ref{SessionID: "s"})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
}
