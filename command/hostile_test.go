package command_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

// hostile is a server that answers the command endpoints with whatever
// its handler writes, and counts the connections clients open to it.
type hostile struct {
	conns atomic.Int64
	log   bytes.Buffer // what the client logs, at debug level, from the calling goroutine
	c     *conn.Conn
}

// newHostile serves handler with a client whose bearer token is token.
func newHostile(t *testing.T, token string, handler http.HandlerFunc) *hostile {
	t.Helper()
	h := &hostile{}
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	core, err := httpcore.New(httpcore.Config{BaseURL: srv.URL, Provider: auth.Static(auth.Credentials{Token: token, TeamID: "team_1", ProjectID: "prj_1"}),
		Retry:  httpcore.RetryPolicy{MaxRetries: -1},
		Logger: slog.New(slog.NewTextHandler(&h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	h.c = &conn.Conn{Core: core, WithSession: func(_ context.Context, fn func(string) error) error { return fn("sbx_1") },
		Reattach: conn.ReattachPolicy{Disabled: true}}
	return h
}

// handle returns a handle to command cmd_1 of session sbx_1.
func (h *hostile) handle(t *testing.T) *command.Handle {
	t.Helper()
	hd, err := attachCmd(h.c, command.Ref{SessionID: "sbx_1", CommandID: "cmd_1"})
	require.NoError(t, err)
	return hd
}

const (
	startLine  = `{"command":{"id":"cmd_1","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":null,"startedAt":1}}` + "\n"
	finishLine = `{"command":{"id":"cmd_1","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":0,"startedAt":1}}` + "\n"
	finishedJS = `{"command":{"id":"cmd_1","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":0,"startedAt":1}}`
)

// serveCommand answers an attached run with the lines body writes, a wait
// or an info as the command finished, and the logs with body alone.
func serveCommand(body func(w io.Writer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/cmd"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, startLine)
			body(w)
			io.WriteString(w, finishLine)
			// Like a server that streams, it sends each line as it comes:
			// the end of the body follows the final line.
			http.NewResponseController(w).Flush()
		case strings.HasSuffix(r.URL.Path, "/logs"):
			w.Header().Set("Content-Type", "application/x-ndjson")
			body(w)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, finishedJS)
		}
	}
}

// hugeLine writes one log line of size bytes of data, data first as
// hosted Vercel writes it, or its stream first.
func hugeLine(size int, dataFirst bool) func(w io.Writer) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	return func(w io.Writer) {
		if dataFirst {
			io.WriteString(w, `{"data":"`)
		} else {
			io.WriteString(w, `{"stream":"stdout","data":"`)
		}
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		if dataFirst {
			io.WriteString(w, `","stream":"stdout"}`+"\n")
		} else {
			io.WriteString(w, `"}`+"\n")
		}
	}
}

// hugeSum is the hash of the data hugeLine writes.
func hugeSum(size int) []byte {
	h := sha256.New()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	for n := 0; n < size; n += len(chunk) {
		h.Write(chunk)
	}
	return h.Sum(nil)
}

// hashWriter hashes what it is given and counts it.
type hashWriter struct {
	h hash.Hash
	n int
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return w.h.Write(p)
}

// TestHugeLineBoundedMemory delivers a 256 MiB output line whole to the
// writer and through Logs, in both key orders, while the client allocates
// less than 16 MiB: the line comes in pieces as it arrives, and data that
// comes before its stream's name waits in a temporary file that is
// removed after.
func TestHugeLineBoundedMemory(t *testing.T) {
	const size = 256 << 20
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	want := hugeSum(size)
	for _, dataFirst := range []bool{true, false} {
		h := newHostile(t, "tok_huge_line", serveCommand(hugeLine(size, dataFirst)))
		w := &hashWriter{h: sha256.New()}
		var res *command.Result
		var err error
		alloc := benchdata.Allocated(func() {
			res, err = run(t.Context(), h.c, &command.Cmd{Name: "x", Stdout: w, CaptureLimit: 1 << 10})
		})
		require.NoError(t, err)
		assert.Equal(t, size, w.n, "data first %v: the whole line reaches the writer", dataFirst)
		assert.Equal(t, want, w.h.Sum(nil))
		assert.Equal(t, int64(size), res.StdoutBytes)
		assert.Len(t, res.Stdout, 1<<10, "CaptureLimit bounds what is kept")
		assert.Less(t, alloc, uint64(16<<20), "data first %v: an attached run allocated %d bytes", dataFirst, alloc)
		t.Logf("data first %v: an attached run allocated %.1f MiB", dataFirst, float64(alloc)/(1<<20))

		hd := h.handle(t)
		w = &hashWriter{h: sha256.New()}
		alloc = benchdata.Allocated(func() {
			for ev, lerr := range hd.Logs(t.Context()) {
				if err = lerr; err != nil {
					break
				}
				w.Write(ev.Data)
			}
		})
		require.NoError(t, err)
		assert.Equal(t, size, w.n, "data first %v: the whole line comes through Logs", dataFirst)
		assert.Equal(t, want, w.h.Sum(nil))
		assert.Less(t, alloc, uint64(16<<20), "data first %v: Logs allocated %d bytes", dataFirst, alloc)
		t.Logf("data first %v: Logs allocated %.1f MiB", dataFirst, float64(alloc)/(1<<20))
	}
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file is left")
}

// TestHugeFieldsRefused checks that a line whose huge part is not log
// data (the stream's name, an unknown key, an unknown value) is refused
// with a *StreamError, in bounded memory.
func TestHugeFieldsRefused(t *testing.T) {
	const size = 100 << 20
	huge := func(head, tail string) func(w io.Writer) {
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		return func(w io.Writer) {
			io.WriteString(w, head)
			for n := 0; n < size; n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			io.WriteString(w, tail)
		}
	}
	for name, body := range map[string]func(io.Writer){
		"stream":        huge(`{"data":"x","stream":"`, `"}`+"\n"),
		"unknown key":   huge(`{"`, `":1,"data":"x","stream":"stdout"}`+"\n"),
		"unknown value": huge(`{"stream":"stdout","data":"x","other":"`, `"}`+"\n"),
	} {
		h := newHostile(t, "tok_huge_fields", serveCommand(body))
		var err error
		alloc := benchdata.Allocated(func() { _, err = run(t.Context(), h.c, &command.Cmd{Name: "x"}) })
		var se *apierr.StreamError
		require.ErrorAs(t, err, &se, name)
		assert.Equal(t, "frame_too_large", se.Code, name)
		assert.Less(t, alloc, uint64(16<<20), "%s: allocated %d bytes", name, alloc)
		t.Logf("%s: refused after %.1f MiB allocated", name, float64(alloc)/(1<<20))
	}
}

// TestSlowWriterIsNotSilence runs a command that prints every 20 ms into
// a writer that takes 250 ms a write, with an InactivityTimeout of 100 ms:
// the command is never silent, so it is not killed. A command that is
// truly silent still is.
func TestSlowWriterIsNotSilence(t *testing.T) {
	t.Parallel()
	var kills atomic.Int32
	h := newHostile(t, "tok_slow_writer", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/kill") {
			kills.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, finishedJS)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, startLine)
		silent := strings.Contains(readAll(r), `"silent"`)
		for i := range 4 {
			fmt.Fprintf(w, `{"data":"line %d\n","stream":"stdout"}`+"\n", i)
			http.NewResponseController(w).Flush()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		if silent {
			select {
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, finishLine)
	})
	slow := writerFunc(func(p []byte) (int, error) {
		time.Sleep(250 * time.Millisecond)
		return len(p), nil
	})
	res, err := run(t.Context(), h.c, &command.Cmd{Name: "x", Stdout: slow, InactivityTimeout: 100 * time.Millisecond})
	require.NoError(t, err, "a slow writer is not a silent command")
	assert.Equal(t, "line 0\nline 1\nline 2\nline 3\n", string(res.Stdout))
	assert.Zero(t, kills.Load(), "nothing was killed")

	_, err = run(t.Context(), h.c, &command.Cmd{Name: "silent", InactivityTimeout: 100 * time.Millisecond})
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie, "a silent command is stopped")
	assert.True(t, ie.Killed)
	assert.Equal(t, int32(1), kills.Load())
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func readAll(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// TestStreamErrorsHideToken has a server echo the client's token in every
// stream error it controls (an error frame's code and message, an error
// frame with text data, an unexpected content type and its body, a
// malformed line): it never appears in an error string or a log line.
func TestStreamErrorsHideToken(t *testing.T) {
	t.Parallel()
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	canary := "canary_" + hex.EncodeToString(b)
	for name, body := range map[string]string{
		"error frame":  `{"stream":"error","data":{"code":"` + canary + `","message":"token ` + canary + ` refused"}}` + "\n",
		"text error":   `{"stream":"error","data":"token ` + canary + `"}` + "\n",
		"data first":   `{"data":"token ` + canary + `","stream":"error"}` + "\n",
		"malformed":    `{"stream":"` + canary + `","data":1}` + "\n",
		"content type": "",
	} {
		h := newHostile(t, canary, func(w http.ResponseWriter, r *http.Request) {
			if body == "" {
				w.Header().Set("Content-Type", "text/plain; token="+canary)
				io.WriteString(w, "your token is "+canary)
				return
			}
			serveCommand(func(w io.Writer) { io.WriteString(w, body) })(w, r)
		})
		_, runErr := run(t.Context(), h.c, &command.Cmd{Name: "x"})
		require.Error(t, runErr, name)
		var logErr error
		for _, err := range h.handle(t).Logs(t.Context()) {
			if err != nil {
				logErr = err
			}
		}
		require.Error(t, logErr, name)
		for _, err := range []error{runErr, logErr} {
			assert.NotContains(t, err.Error(), canary, name)
			assert.NotContains(t, fmt.Sprintf("%+v %#v", err, errors.Unwrap(err)), canary, name)
		}
		assert.NotContains(t, h.log.String(), canary, name)
	}
}

// TestAttachedRunsReuseConnections runs 100 attached commands in a row
// against a server that ends each stream after its final line: they share
// one connection.
func TestAttachedRunsReuseConnections(t *testing.T) {
	t.Parallel()
	h := newHostile(t, "tok_reuse", serveCommand(func(w io.Writer) {
		io.WriteString(w, `{"data":"hi\n","stream":"stdout"}`+"\n")
		http.NewResponseController(w.(http.ResponseWriter)).Flush()
	}))
	for range 100 {
		_, err := run(t.Context(), h.c, &command.Cmd{Name: "x"})
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, h.conns.Load(), int64(2))
}

// TestRunAfterFinalLine checks what follows the final line: a server that
// keeps the stream open, or sends more, does not hold the run, which
// returns its result and gives the connection up.
func TestRunAfterFinalLine(t *testing.T) {
	t.Parallel()
	for name, after := range map[string]func(w http.ResponseWriter, r *http.Request){
		"held open": func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(time.Minute):
			case <-r.Context().Done():
			}
		},
		"more lines": func(w http.ResponseWriter, r *http.Request) {
			line := `{"data":"after the end\n","stream":"stdout"}` + "\n"
			for range 10_000 {
				if _, err := io.WriteString(w, line); err != nil {
					return
				}
			}
		},
	} {
		h := newHostile(t, "tok_after_final", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-ndjson")
			io.WriteString(w, startLine+finishLine)
			http.NewResponseController(w).Flush()
			after(w, r)
		})
		began := time.Now()
		res, err := run(t.Context(), h.c, &command.Cmd{Name: "x"})
		require.NoError(t, err, name)
		assert.Equal(t, 0, res.ExitCode(), name)
		assert.Empty(t, res.Stdout, "%s: lines after the final line are ignored", name)
		assert.Less(t, time.Since(began), 30*time.Second, "%s: the run is not held", name)
	}
}
