package pty_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// fakeTerminal serves one WebSocket with play, after checking the token
// and reading the start frame, which it hands to play.
func fakeTerminal(t *testing.T, play func(ctx context.Context, c *websocket.Conn, start map[string]any)) sandbox.Interactive {
	t.Helper()
	const token = "tok_secret/+="
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != token || r.URL.Query().Get("keep") != "1" {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		typ, data, err := c.Read(r.Context())
		if !assert.NoError(t, err) || !assert.Equal(t, websocket.MessageText, typ, "the start frame is text") {
			return
		}
		var start map[string]any
		if assert.NoError(t, json.Unmarshal(data, &start)) {
			play(r.Context(), c, start)
		}
	}))
	t.Cleanup(srv.Close)
	return sandbox.Interactive{URL: "ws" + strings.TrimPrefix(srv.URL, "http") + "/pty?keep=1", Token: token}
}

func sendText(ctx context.Context, c *websocket.Conn, s string) {
	_ = c.Write(ctx, websocket.MessageText, []byte(s))
}

func TestStartFrameAndOutputAsTheCLI(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 100<<10) // longer than any control message
	got := make(chan map[string]any, 1)
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, start map[string]any) {
		got <- start
		_ = c.Write(ctx, websocket.MessageBinary, []byte("binary "))
		sendText(ctx, c, "not json ")       // output, as in the CLI
		sendText(ctx, c, `{"type":"ping"}`) // a control message of no interest
		sendText(ctx, c, big)               // output, streamed
		sendText(ctx, c, `{"type":"exit","code":5}`)
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	out := newScreen()
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{
		Name: "bash", Args: []string{"-l"}, Env: map[string]string{"A": "1"},
		Cwd: "/vercel/sandbox/app", Sudo: true, Rows: 10, Cols: 20, Stdout: out,
	})
	require.NoError(t, err)
	code, err := s.Wait()
	require.NoError(t, err)
	assert.Equal(t, 5, code)
	assert.Equal(t, "binary not json "+big, out.String())
	assert.Equal(t, map[string]any{
		"type": "start", "command": "sudo", "args": []any{"bash", "-l"},
		"env": []any{"A=1", "TERM=xterm-256color"}, "cwd": "/vercel/sandbox/app",
		"cols": float64(20), "rows": float64(10),
	}, <-got)
}

func TestDefaultsOfTheStartFrame(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, start map[string]any) {
		got <- start
		sendText(ctx, c, `{"type":"exit","code":0}`)
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{Env: map[string]string{"TERM": "dumb"}})
	require.NoError(t, err)
	_, err = s.Wait()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"type": "start", "command": "sh", "args": []any{}, "env": []any{"TERM=dumb"},
		"cols": float64(80), "rows": float64(24),
	}, <-got, "sh on 24x80, args always sent, TERM overridable")
}

func TestInputAndResizeFrames(t *testing.T) {
	t.Parallel()
	type frame struct {
		typ  websocket.MessageType
		data string
	}
	got := make(chan frame, 2)
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		for range 2 {
			typ, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			got <- frame{typ, string(data)}
		}
		sendText(ctx, c, `{"type":"exit","code":0}`)
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{Stdin: strings.NewReader("ls\n")})
	require.NoError(t, err)
	assert.Equal(t, frame{websocket.MessageBinary, "ls\n"}, <-got, "input goes as binary frames")
	require.NoError(t, s.Resize(40, 100))
	assert.Equal(t, frame{websocket.MessageText, `{"type":"resize","cols":100,"rows":40}`}, <-got)
	_, err = s.Wait()
	require.NoError(t, err)
}

func TestServerClosesWithoutExitFrame(t *testing.T) {
	t.Parallel()
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		_ = c.Write(ctx, websocket.MessageBinary, []byte("partial"))
		_ = c.Close(websocket.StatusInternalError, "controller restarted")
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	require.NoError(t, err)
	code, err := s.Wait()
	assert.Equal(t, -1, code, "no invented exit code")
	require.ErrorIs(t, err, pty.ErrStreamEnded)
	var de *pty.DisconnectError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, int(websocket.StatusInternalError), de.CloseStatus)
	assert.Equal(t, "controller restarted", de.Reason)
}

func TestExitFrameWithoutCode(t *testing.T) {
	t.Parallel()
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		sendText(ctx, c, `{"type":"exit","code":"zero"}`)
		_ = c.Close(websocket.StatusNormalClosure, "")
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	require.NoError(t, err)
	code, err := s.Wait()
	assert.Equal(t, -1, code, "no invented exit code")
	assert.ErrorIs(t, err, pty.ErrStreamEnded)
}

func TestCloseEndsTheSession(t *testing.T) {
	t.Parallel()
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		_, _, _ = c.Read(ctx) // until the client goes
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	code, err := s.Wait()
	assert.Equal(t, -1, code)
	require.ErrorIs(t, err, pty.ErrClosed)
	assert.ErrorIs(t, s.Resize(10, 10), pty.ErrClosed)
}

func TestDialRefusals(t *testing.T) {
	t.Parallel()
	ticket := fakeTerminal(t, func(context.Context, *websocket.Conn, map[string]any) {})
	wrong := ticket
	wrong.Token = "tok_wrong"
	_, err := pty.Dial(t.Context(), wrong, &pty.Cmd{})
	var de *pty.DialError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, http.StatusUnauthorized, de.StatusCode)
	assert.ErrorIs(t, err, sandbox.ErrUnauthorized)
	assert.NotContains(t, err.Error(), "tok_wrong")
	assert.NotContains(t, de.URL, "?", "the URL is shown without its query")

	unreachable := sandbox.Interactive{URL: "ws://127.0.0.1:1/pty", Token: "tok_unreachable"}
	_, err = pty.Dial(t.Context(), unreachable, &pty.Cmd{})
	require.ErrorAs(t, err, &de)
	assert.NotContains(t, err.Error(), "tok_unreachable", "net/http quotes the URL; the token must not follow")

	for _, bad := range []sandbox.Interactive{{URL: "ftp://x", Token: "t"}, {URL: "wss://x"}} {
		_, err = pty.Dial(t.Context(), bad, &pty.Cmd{})
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	}
	_, err = pty.Dial(t.Context(), ticket, &pty.Cmd{Rows: 1 << 16})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = pty.Dial(t.Context(), ticket, nil)
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestLargeInputGoesInBoundedFrames(t *testing.T) {
	t.Parallel()
	const size = 100 << 10
	largest := make(chan int, 1)
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		most := 0
		for got := 0; got < size; {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			got += len(data)
			most = max(most, len(data))
		}
		largest <- most
		sendText(ctx, c, `{"type":"exit","code":0}`)
	})
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	require.NoError(t, err)
	n, err := s.Write(make([]byte, size)) // a large paste
	require.NoError(t, err)
	assert.Equal(t, size, n)
	assert.LessOrEqual(t, <-largest, 32<<10, "servers bound their frames")
	_, err = s.Wait()
	require.NoError(t, err)
}
