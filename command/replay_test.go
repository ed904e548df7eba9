package command_test

import (
	"fmt"
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
// with what was delivered. Each must end in a typed error, never in a
// wrong output.

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
	h.c.Reattach = command.ReattachPolicy{}
	return h, &logs
}

// outputLost asserts that err is an *OutputLostError about stream at
// offset.
func outputLost(t *testing.T, err error, stream string, offset int64) {
	t.Helper()
	require.ErrorIs(t, err, command.ErrOutputLost)
	var ol *command.OutputLostError
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

	stdout, _, err := h.handle(t).Output(t.Context())
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
	res, err := command.Run(t.Context(), h.c, &command.Cmd{Name: "x", Stdout: &out})
	outputLost(t, err, "stdout", 8)
	assert.Equal(t, "one\ntwo\n", out.String())
	require.NotNil(t, res, "the output captured so far")
	assert.Equal(t, "one\ntwo\n", string(res.Stdout))
	assert.Equal(t, -1, res.ExitCode, "no exit code invented")
}
