package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// TTYExecutor is an Executor that can also run a command on a terminal.
// The interactive endpoint needs one: with any other executor it answers
// 400. Packages hostexec and isolated implement it.
type TTYExecutor interface {
	Executor
	// StartTTY starts cmd on a new pseudo-terminal of rows by cols that is
	// its controlling terminal, and returns at once. Everything the command
	// writes to the terminal goes to cmd.Stdout (cmd.Stderr is not used).
	// ctx is cancelled when the sandbox session ends; the process must then
	// die. A command that cannot be found or run ends with a message and
	// exit code 127 or 126, as in Start. The server fills cmd as it
	// fills a command given to Start (working directory, EtcDir,
	// environment, network policy): a terminal is a command of its
	// sandbox.
	StartTTY(ctx context.Context, cmd *Cmd, rows, cols int) (TTYProcess, error)
}

// TTYProcess is a command started on a terminal.
type TTYProcess interface {
	Process
	// Write types p on the terminal. It may block while the command does
	// not read, and fails once Wait has returned.
	Write(p []byte) (int, error)
	// Resize sets the terminal's size; the command gets SIGWINCH.
	Resize(rows, cols int) error
}

// ptyPath is where the server serves the WebSocket of an interactive
// session, outside the API: /local/pty/{sid}. Like the real service it
// takes the ticket's token as the token query parameter and no bearer
// token.
const ptyPath = "/local/pty/"

// ticketTTL is how long an unused ticket stays valid, on the server's
// clock. A ticket opens one connection.
const ticketTTL = 5 * time.Minute

// ttyTickets are the tickets handed out and not used yet.
type ttyTickets struct {
	mu sync.Mutex
	m  map[string]ttyTicket // by token
}

type ttyTicket struct {
	sid     string
	expires time.Time
}

// issue returns a new token for session sid.
func (t *ttyTickets) issue(sid string, now time.Time) string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // never fails
	token := "pty_" + hex.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]ttyTicket{}
	}
	for k, v := range t.m {
		if !now.Before(v.expires) {
			delete(t.m, k)
		}
	}
	t.m[token] = ttyTicket{sid: sid, expires: now.Add(ticketTTL)}
	return token
}

// redeem uses up token and reports whether it opens session sid now.
func (t *ttyTickets) redeem(token, sid string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[token]
	delete(t.m, token)
	return ok && v.sid == sid && now.Before(v.expires)
}

// handleInteractive serves POST /v2/sandboxes/sessions/{sid}/interactive:
// a ticket to a terminal in the session, served by servePTY.
func (s *Server) handleInteractive(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	if _, aerr := s.lookupSession(sid, true); aerr != nil {
		return aerr
	}
	if _, ok := s.exec.(TTYExecutor); !ok {
		return badRequest("interactive sessions need an executor that runs terminals, such as hostexec or isolated")
	}
	scheme := "ws://"
	if r.TLS != nil {
		scheme = "wss://"
	}
	writeJSON(w, http.StatusOK, wire.InteractiveResponse{
		URL:   scheme + r.Host + ptyPath + sid,
		Token: s.tty.issue(sid, s.now()),
	})
	return nil
}
