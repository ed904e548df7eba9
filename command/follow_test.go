package command_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

// cutServer cuts the first cuts answers of each kind (the connection is
// aborted before the headers, as hosted Vercel's edge does to a wait, or
// after the first log line), then answers whole.
func cutServer(t *testing.T, cuts int32) (*command.Handle, *[]conn.ReattachEvent, *atomic.Int32) {
	t.Helper()
	var waits, logs atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/sandboxes/sessions/{sid}/cmd/{cid}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") == "true" && waits.Add(1) <= cuts {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"command":{"id":"cmd_1","sessionId":"sbx_1","name":"x","args":[],"cwd":"/","exitCode":0,"startedAt":1}}`)
	})
	mux.HandleFunc("/v2/sandboxes/sessions/{sid}/cmd/{cid}/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = io.WriteString(w, `{"data":"one\n","stream":"stdout"}`+"\n")
		if logs.Add(1) <= cuts {
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		_, _ = io.WriteString(w, `{"data":"two\n","stream":"stdout"}`+"\n"+`{"data":"err\n","stream":"stderr"}`+"\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	core, err := httpcore.New(httpcore.Config{BaseURL: srv.URL, Provider: auth.Static(auth.Credentials{Token: "tok", TeamID: "team_1", ProjectID: "prj_1"}),
		Retry: httpcore.RetryPolicy{MaxRetries: -1}})
	require.NoError(t, err)
	var events []conn.ReattachEvent
	p := conn.ReattachPolicy{OnReattach: func(ev conn.ReattachEvent) { events = append(events, ev) }}
	h, err := attachCmd(&conn.Conn{Core: core, Reattach: p}, command.Ref{SessionID: "sbx_1", CommandID: "cmd_1"})
	require.NoError(t, err)
	return h, &events, &waits
}

func TestWaitRepeatsACutWait(t *testing.T) {
	t.Parallel()
	h, events, waits := cutServer(t, 2)
	res, err := h.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	assert.EqualValues(t, 3, waits.Load(), "two cuts, then the answer")
	require.Len(t, *events, 2)
	assert.Equal(t, "wait", (*events)[0].Op)
	assert.Equal(t, 2, (*events)[1].Attempt)
}

func TestOutputSkipsWhatACutStreamDelivered(t *testing.T) {
	t.Parallel()
	h, events, _ := cutServer(t, 2)
	var stdout, stderr strings.Builder
	require.NoError(t, h.CopyOutput(t.Context(), &stdout, &stderr))
	assert.Equal(t, "one\ntwo\n", stdout.String(), "each byte once")
	assert.Equal(t, "err\n", stderr.String())
	require.Len(t, *events, 2)
	assert.Equal(t, "logs", (*events)[0].Op)
	assert.EqualValues(t, 4, (*events)[0].Delivered)
	assert.ErrorIs(t, (*events)[0].Err, apierr.ErrStreamEnded)
}
