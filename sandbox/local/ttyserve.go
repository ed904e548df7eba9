package local

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// maxPTYFrame bounds a frame a terminal client sends: input, resize or
// start.
const maxPTYFrame = 64 << 10

// healthPath is the terminal host's health check, outside the API. The
// official CLI probes GET /health on the host of an interactive session's
// URL before it opens the WebSocket, and gives up unless it answers 2xx.
const healthPath = "/health"

// serveHealth answers the terminal host's health check if r is one, and
// reports whether it was. Like the terminal's WebSocket it takes no bearer
// token.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != healthPath || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = io.WriteString(w, "ok\n")
	}
	return true
}

// servePTY serves the WebSocket of an interactive session if r is for
// one, and reports whether it was.
//
// The connection runs in two halves. This goroutine reads the client's
// frames (input and resizes) until the connection ends; a second one waits
// for the command, and once its output is drained sends the exit frame and
// closes the connection. Whichever ends first ends the other: a client that
// goes away kills the command, and the session's end kills both.
func (s *Server) servePTY(w http.ResponseWriter, r *http.Request) bool {
	sid, ok := strings.CutPrefix(r.URL.Path, ptyPath)
	if !ok {
		return false
	}
	if !s.tty.redeem(r.URL.Query().Get("token"), sid, s.now()) {
		writeError(w, errorf(http.StatusForbidden, codeForbidden, "The interactive session token is invalid, used or expired"))
		return true
	}
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		writeError(w, aerr)
		return true
	}
	tx, ok := s.exec.(TTYExecutor)
	if !ok {
		writeError(w, badRequest("interactive sessions need an executor that runs terminals, such as hostexec or isolated"))
		return true
	}
	done, aerr := s.beginFileOp(sess)
	if aerr != nil {
		writeError(w, aerr)
		return true
	}
	defer done()
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return true // Accept has answered
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxPTYFrame)
	ctx := sess.ctx
	start, err := readStart(ctx, conn)
	if err != nil {
		_ = conn.Close(websocket.StatusPolicyViolation, closeReason(err.Error()))
		return true
	}
	cmd, aerr := s.ttyCmd(sess, start)
	if aerr != nil {
		_ = conn.Close(websocket.StatusPolicyViolation, closeReason(aerr.message))
		return true
	}
	cmd.Stdout = &wsOutput{ctx: ctx, conn: conn}
	cmd.Stderr = cmd.Stdout
	rows, cols := ttySize(start.Rows, 24), ttySize(start.Cols, 80)
	var proc TTYProcess
	var code int
	if proc, err = tx.StartTTY(ctx, cmd, rows, cols); err != nil {
		_, _ = cmd.Stdout.Write([]byte("local: cannot start " + cmd.Name + ": " + err.Error() + "\r\n"))
		code = exitNotStarted
	}
	var watched *runningCommand
	if proc != nil {
		watched = s.watchTerminal(sess, proc, cmd.Stdout)
	}
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		if proc != nil {
			var err error
			if code, err = proc.Wait(); err != nil {
				s.log.Warn("local: executor wait failed", "session", sid, "err", err)
			}
			s.unwatchTerminal(sess, watched)
		}
		exit, _ := json.Marshal(wire.PTYExitFrame{Type: wire.PTYExit, Code: &code})
		if conn.Write(ctx, websocket.MessageText, exit) == nil {
			_ = conn.Close(websocket.StatusNormalClosure, "")
		}
		_ = conn.CloseNow()
	}()
	if proc != nil {
		feedTTY(ctx, conn, proc)
		_ = proc.Signal(signalKill) // the client went away: so does the command
	}
	<-waited
	return true
}

// maxCloseReason is the longest reason a close frame carries (RFC 6455:
// a control frame's 125 bytes, less the status code's two).
const maxCloseReason = 123

// closeReason is msg cut to fit a close frame, on a character boundary:
// a longer reason would fail the close, and the client would see the
// connection drop instead of why.
func closeReason(msg string) string {
	if len(msg) <= maxCloseReason {
		return msg
	}
	cut := maxCloseReason - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// readStart reads the start frame.
func readStart(ctx context.Context, conn *websocket.Conn) (wire.PTYStartFrame, error) {
	var start wire.PTYStartFrame
	typ, data, err := conn.Read(ctx)
	if err != nil {
		return start, err
	}
	if typ != websocket.MessageText || json.Unmarshal(data, &start) != nil || start.Type != wire.PTYStart {
		return start, errors.New("the first frame must be a start frame")
	}
	if start.Command == "" {
		return start, errors.New("command must not be empty")
	}
	return start, nil
}

// ttyCmd builds the command of a start frame as the command endpoint
// builds any other (checkRun, runEnv, execCmd): a terminal is a command
// of its sandbox.
func (s *Server) ttyCmd(sess *sessionRec, start wire.PTYStartFrame) (*Cmd, *apiError) {
	env := map[string]string{}
	for _, kv := range start.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	cwd, hostCwd, aerr := s.checkRun(sess, start.Command, env, start.Cwd)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	env = s.runEnv(sess, env)
	s.mu.Unlock()
	return s.execCmd(sess, s.ids.commandID(), start.Command, start.Args, env, cwd, hostCwd, false), nil
}

// ttySize is n when it is a terminal dimension, else def.
func ttySize(n, def int) int {
	if n <= 0 || n > 1<<16-1 {
		return def
	}
	return n
}

// feedTTY copies the client's input to the terminal and applies its
// resizes until the connection ends.
func feedTTY(ctx context.Context, conn *websocket.Conn, proc TTYProcess) {
	for {
		typ, r, err := conn.Reader(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if _, err := io.Copy(proc, r); err != nil {
				return
			}
			continue
		}
		data, err := io.ReadAll(r) // bounded by the read limit
		if err != nil {
			return
		}
		var resize wire.PTYResizeFrame
		if json.Unmarshal(data, &resize) == nil && resize.Type == wire.PTYResize &&
			resize.Rows > 0 && resize.Cols > 0 && resize.Rows < 1<<16 && resize.Cols < 1<<16 {
			_ = proc.Resize(resize.Rows, resize.Cols)
		}
	}
}

// wsOutput sends each write as one binary frame.
type wsOutput struct {
	ctx  context.Context
	conn *websocket.Conn
}

// Write sends p as one binary frame.
func (o *wsOutput) Write(p []byte) (int, error) {
	if err := o.conn.Write(o.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// watchTerminal registers the running command of a terminal of sess, so
// that the disk watcher kills it as it kills any command of the session
// (where the quota is watched, not held); out is the terminal's output.
func (s *Server) watchTerminal(sess *sessionRec, proc Process, out io.Writer) *runningCommand {
	t := &runningCommand{tty: out, proc: proc}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.terminals == nil {
		sess.terminals = make(map[*runningCommand]struct{})
	}
	sess.terminals[t] = struct{}{}
	s.watchDisk(sess)
	return t
}

// unwatchTerminal forgets a terminal's command once it has ended.
func (s *Server) unwatchTerminal(sess *sessionRec, t *runningCommand) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(sess.terminals, t)
}
