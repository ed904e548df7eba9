package command_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
)

// Hostile answers about a command's output: log replays that do not agree
// with what was delivered, and frames or waits that name another command.
// Each must end in a typed error, never in a wrong output or exit code.

// logLines renders stdout log lines.
func logLines(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, `{"stream":"stdout","data":%q}`+"\n", l)
	}
	return b.String()
}

// cutAfter writes body and aborts the answer: a read error for the client.
func cutAfter(w http.ResponseWriter, body string) {
	io.WriteString(w, body)
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// replays serves a finished command (cmd_1, exit 0) whose attached stream
// and first log stream are written by first, and whose later log streams
// are replay. It counts the log requests.
func replays(t *testing.T, first func(w http.ResponseWriter, attached bool), replay string) (*hostile, *atomic.Int32) {
	t.Helper()
	var logs atomic.Int32
	h := newHostile(t, "tok_replay", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/cmd"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			first(w, true)
		case strings.HasSuffix(r.URL.Path, "/logs"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			if logs.Add(1) == 1 {
				first(w, false)
				return
			}
			io.WriteString(w, replay)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, finishedJS)
		}
	})
	h.c.Reattach = conn.ReattachPolicy{}
	return h, &logs
}

// outputLost asserts that err is an *OutputLostError about stream at
// offset.
func outputLost(t *testing.T, err error, stream string, offset int64) {
	t.Helper()
	require.ErrorIs(t, err, apierr.ErrOutputLost)
	var ol *apierr.OutputLostError
	require.ErrorAs(t, err, &ol)
	assert.Equal(t, stream, ol.Stream, "the stream is named")
	assert.Equal(t, offset, ol.Offset, "and the offset")
	assert.Equal(t, "cmd_1", ol.CommandID)
	assert.Equal(t, "sbx_1", ol.SessionID)
}

func TestLogsReplayThatDiffersIsOutputLost(t *testing.T) {
	t.Parallel()
	h, _ := replays(t, func(w http.ResponseWriter, _ bool) {
		cutAfter(w, logLines("one\n", "two\n"))
	}, logLines("uno\n", "dos\n", "tres\n"))

	var got strings.Builder
	var err error
	for ev, e := range h.handle(t).Logs(t.Context()) {
		if e != nil {
			err = e
			break
		}
		got.Write(ev.Data)
	}
	assert.Equal(t, "one\ntwo\n", got.String(), "nothing of a replay that disagrees is delivered")
	outputLost(t, err, "stdout", 8)
}

func TestLogsReplayShorterThanDeliveredIsOutputLost(t *testing.T) {
	t.Parallel()
	h, logs := replays(t, func(w http.ResponseWriter, _ bool) {
		cutAfter(w, logLines("one\n", "two\n"))
	}, logLines("one\n"))

	stdout, err := h.handle(t).Output(t.Context())
	assert.Equal(t, "one\ntwo\n", string(stdout))
	outputLost(t, err, "stdout", 4)
	assert.LessOrEqual(t, logs.Load(), int32(7), "asked again a bounded number of times")
}

func TestRunReplayThatDiffersIsOutputLost(t *testing.T) {
	t.Parallel()
	h, _ := replays(t, func(w http.ResponseWriter, attached bool) {
		if attached {
			cutAfter(w, startLine+logLines("one\n", "two\n"))
		}
	}, logLines("uno\n", "dos\n", "tres\n"))

	var out strings.Builder
	res, err := run(t.Context(), h.c, &command.Cmd{Name: "x", Stdout: &out})
	outputLost(t, err, "stdout", 8)
	assert.Equal(t, "one\ntwo\n", out.String())
	require.NotNil(t, res, "the output captured so far")
	assert.Equal(t, "one\ntwo\n", string(res.Stdout))
	assert.Equal(t, -1, res.ExitCode(), "no exit code invented")
}

// otherCommand is cmd_2's final state, in a stream or an answer.
const otherCommand = `{"command":{"id":"cmd_2","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":0,"startedAt":1}}`

// mismatch asserts that err refuses an answer about another command.
func mismatch(t *testing.T, err error) {
	t.Helper()
	var se *apierr.StreamError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "command_mismatch", se.Code)
	assert.Equal(t, "cmd_1", se.CommandID)
	assert.Contains(t, se.Error(), "another command")
	assert.NotContains(t, se.Error(), "cmd_2", "what a server wrote there is not repeated")
	var ee *command.ExitError
	assert.False(t, errors.As(err, &ee), "not taken as this command's exit")
}

func TestRunFinalFrameOfAnotherCommandIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostile(t, "tok_other", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, startLine+logLines("one\n")+otherCommand+"\n")
	})
	res, err := run(t.Context(), h.c, &command.Cmd{Name: "x"})
	mismatch(t, err)
	require.NotNil(t, res)
	assert.Equal(t, "one\n", string(res.Stdout))
	assert.Equal(t, -1, res.ExitCode())
	assert.Equal(t, "cmd_1", res.CommandID)
}

func TestWaitAnswerOfAnotherCommandIsRefused(t *testing.T) {
	t.Parallel()
	h := newHostile(t, "tok_other_wait", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, otherCommand)
	})
	hd := h.handle(t)
	res, err := hd.Wait(t.Context())
	mismatch(t, err)
	assert.Nil(t, res)
	_, err = hd.Info(t.Context())
	mismatch(t, err)
}

// A cut run whose follower is told by a wait that another command
// finished does not take that exit as its own.
func TestRunFollowerRefusesAnotherCommandsWait(t *testing.T) {
	t.Parallel()
	h := newHostile(t, "tok_other_follow", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST":
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, startLine+logLines("one\n")) // ends without its final line
		case strings.HasSuffix(r.URL.Path, "/logs"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, logLines("one\n"))
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, otherCommand)
		}
	})
	h.c.Reattach = conn.ReattachPolicy{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, err := run(ctx, h.c, &command.Cmd{Name: "x"})
	mismatch(t, err)
	require.NotNil(t, res)
	assert.Equal(t, "one\n", string(res.Stdout))
}

// A finished command whose logs, once read, can no longer be read (every
// later reading answers 503) is asked again a bounded number of times, then
// reported as output that could not be confirmed whole: never a follow
// that goes on for ever, never a silent success.
func TestFinishedLogsUnreadableAreBounded(t *testing.T) {
	t.Parallel()
	var logs atomic.Int32
	h := newHostile(t, "tok_unreadable", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/logs"):
			if logs.Add(1) > 1 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":"unavailable","message":"try later"}}`)
				return
			}
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, logLines("one\n", "two\n"))
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, finishedJS)
		}
	})
	h.c.Reattach = conn.ReattachPolicy{}
	hd := h.handle(t)
	_, err := hd.Wait(t.Context())
	require.NoError(t, err)

	stdout, err := hd.Output(t.Context())
	assert.Equal(t, "one\ntwo\n", string(stdout), "what was read is kept")
	require.ErrorIs(t, err, apierr.ErrOutputLost)
	var ol *apierr.OutputLostError
	require.ErrorAs(t, err, &ol)
	assert.Equal(t, int64(8), ol.Delivered)
	assert.Equal(t, 0, ol.ExitCode, "the exit code is known")
	assert.LessOrEqual(t, logs.Load(), int32(7), "asked again a bounded number of times")
}
