package sandbox

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Interactive is a ticket for an interactive session: the WebSocket that
// serves a terminal (PTY) in the sandbox, and the token that opens it.
// Package sandbox/pty speaks the terminal protocol over it. The token is a
// secret: String, GoString and LogValue never print it.
type Interactive struct {
	URL   string // a ws:// or wss:// URL
	Token string // sent as the token query parameter of URL
}

// String formats the ticket with its token replaced by [REDACTED].
func (t Interactive) String() string {
	return fmt.Sprintf("sandbox.Interactive{URL:%s Token:%s}", t.URL, redact.Value(t.Token))
}

// GoString formats the ticket for %#v; the token is replaced by [REDACTED].
func (t Interactive) GoString() string {
	return fmt.Sprintf("sandbox.Interactive{URL:%q, Token:%q}", t.URL, redact.Value(t.Token))
}

// LogValue implements slog.LogValuer; the token is replaced by [REDACTED].
func (t Interactive) LogValue() slog.Value {
	return slog.GroupValue(slog.String("url", t.URL), slog.String("token", redact.Value(t.Token)))
}

// OpenSessionInteractive asks for a ticket to an interactive session of the
// running session sessionID. Nothing runs until a client connects to the
// ticket's URL; package sandbox/pty does that.
func (c *Client) OpenSessionInteractive(ctx context.Context, sessionID string) (Interactive, error) {
	return c.openInteractive(ctx, sessionID, "")
}

func (c *Client) openInteractive(ctx context.Context, sessionID, name string) (Interactive, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Interactive{}, err
	}
	var out wire.InteractiveResponse
	// A ticket does nothing until it is used, so asking again is harmless.
	err := c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sessionID) + "/interactive",
		JSON: struct{}{}, Safety: httpcore.Idempotent, Op: "open interactive session",
		SandboxName: name, SessionID: sessionID}, &out)
	if err != nil {
		return Interactive{}, err
	}
	return Interactive{URL: out.URL, Token: out.Token}, nil
}

// OpenInteractive asks for a ticket to an interactive session of the
// current session, resuming the sandbox first when auto-resume is on and
// the session has stopped.
func (s *Sandbox) OpenInteractive(ctx context.Context) (Interactive, error) {
	var out Interactive
	err := s.withSession(ctx, func(sid string) error {
		t, err := s.c.openInteractive(ctx, sid, s.name)
		out = t
		return err
	})
	return out, err
}
