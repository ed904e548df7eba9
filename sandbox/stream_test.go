package sandbox_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// lineCutter passes the first lines of a response through and then fails
// every write, so that the fake stops streaming and the response ends
// cleanly without its final frame. With abort, the connection is cut
// instead. Each line passed through is flushed, so the client has it
// before the cut whatever the server buffers.
type lineCutter struct {
	http.ResponseWriter
	left  int
	abort bool
}

func (w *lineCutter) Write(p []byte) (int, error) {
	if w.left <= 0 {
		if w.abort {
			panic(http.ErrAbortHandler)
		}
		return 0, fmt.Errorf("cut")
	}
	w.left -= bytes.Count(p, []byte("\n"))
	n, err := w.ResponseWriter.Write(p)
	if err == nil {
		err = http.NewResponseController(w.ResponseWriter).Flush()
	}
	return n, err
}

func (w *lineCutter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *lineCutter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noReattach turns re-attachment off, for the tests of what a cut stream
// gives without it.
var noReattach = sandbox.WithReattachPolicy(sandbox.ReattachPolicy{Disabled: true})

func TestRunStreamCutBeforeFinalFrameWithoutReattach(t *testing.T) {
	t.Parallel()
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort=%v", abort), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.handle("job", sandboxtest.Steps{}.Stdout("one\n").Stdout("two\n").Stdout("three\n").Exit(0))
			c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				if isCmdPost(r) {
					// The command line and two log lines, no finish line.
					w = &lineCutter{ResponseWriter: w, left: 3, abort: abort}
				}
				next.ServeHTTP(w, r)
			}, noReattach)
			sb, err := c.Create(t.Context(), sandbox.CreateParams{})
			require.NoError(t, err)

			var out bytes.Buffer
			cmd := sb.Command("job")
			cmd.Stdout = &out
			res, err := cmd.Run(t.Context())
			require.Error(t, err)
			require.NotNil(t, res, "the output so far travels with the error")
			assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
			assert.Equal(t, "one\ntwo\n", string(res.Stdout))
			assert.ErrorIs(t, err, sandbox.ErrStreamEnded)
			var se *sandbox.StreamError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "stream_ended_early", se.Code)
			assert.Equal(t, e.srv.Commands()[0].Command.ID, se.CommandID)
			assert.Equal(t, sb.SessionID(), se.SessionID)
			var ee *command.ExitError
			assert.NotErrorAs(t, err, &ee)
			assert.Equal(t, "one\ntwo\n", out.String(), "what arrived was delivered")
			assert.Equal(t, 1, e.srv.CommandCount(), "a broken stream is not replayed")
		})
	}
}

func TestRunStreamEndsBeforeCommandLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isCmdPost(r) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	res, err := sb.Command("echo").Run(t.Context())
	assert.Nil(t, res)
	assert.ErrorIs(t, err, sandbox.ErrStreamEnded)
}

func TestRunStreamErrorFrame(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"sandbox_stream_closed", "sandbox_stopped"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
				if !isCmdPost(r) {
					next.ServeHTTP(w, r)
					return
				}
				sid := strings.Split(r.URL.Path, "/")[4]
				w.Header().Set("Content-Type", "application/x-ndjson")
				w.WriteHeader(http.StatusOK)
				fmt.Fprintf(w, `{"command":{"id":"cmd_x","name":"echo","args":[],"cwd":"/vercel/sandbox","sessionId":%q,"exitCode":null,"startedAt":1}}`+"\n", sid)
				fmt.Fprintln(w, `{"stream":"stdout","data":"partial\n"}`)
				fmt.Fprintf(w, `{"stream":"error","data":{"code":%q,"message":"Sandbox stream was closed and is not accepting commands."}}`+"\n", code)
				// Lines after an error frame are never read.
				fmt.Fprintln(w, `{"command":{"id":"cmd_x","name":"echo","args":[],"cwd":"/","sessionId":"s","exitCode":0,"startedAt":1}}`)
			})
			sb, err := c.Create(t.Context(), sandbox.CreateParams{})
			require.NoError(t, err)

			var out bytes.Buffer
			cmd := sb.Command("echo")
			cmd.Stdout = &out
			res, err := cmd.Run(t.Context())
			require.NotNil(t, res, "the output so far travels with the error")
			assert.Equal(t, -1, res.ExitCode(), "no invented exit code")
			assert.Equal(t, "partial\n", string(res.Stdout))
			var se *sandbox.StreamError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, code, se.Code)
			assert.Equal(t, "Sandbox stream was closed and is not accepting commands.", se.Message)
			assert.Equal(t, "cmd_x", se.CommandID)
			assert.Equal(t, sb.SessionID(), se.SessionID)
			assert.NotErrorIs(t, err, sandbox.ErrStreamEnded)
			assert.ErrorIs(t, err, sandbox.ErrGone, "the session ended")
			assert.Equal(t, "partial\n", out.String())
			assert.Empty(t, resumeRequests(e.srv), "a stream error is never replayed")
		})
	}
}

func TestRunWrongContentType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if isCmdPost(r) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"command":{"id":"cmd_x","exitCode":0}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	res, err := sb.Command("echo").Run(t.Context())
	assert.Nil(t, res)
	var se *sandbox.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "unexpected_content_type", se.Code)
}

func TestLogsCutWhileRunningWithoutReattach(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handle("job", sandboxtest.Steps{}.Stdout("one\n").Stdout("two\n").Block())
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/logs") {
			w = &lineCutter{ResponseWriter: w, left: 1}
		}
		next.ServeHTTP(w, r)
	}, noReattach)
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	h, err := sb.Command("job").Start(t.Context())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		stdout, _, _ := e.srv.Output(h.ID())
		return stdout == "one\ntwo\n"
	}, 10*time.Second, time.Millisecond)

	var got []string
	var last error
	for ev, err := range h.Logs(t.Context()) {
		if err != nil {
			last = err
			break
		}
		got = append(got, string(ev.Data))
	}
	assert.Equal(t, []string{"one\n"}, got)
	assert.ErrorIs(t, last, sandbox.ErrStreamEnded, "a cut log stream is not mistaken for the end")

	_, err = h.Output(t.Context())
	assert.ErrorIs(t, err, sandbox.ErrStreamEnded)
}
