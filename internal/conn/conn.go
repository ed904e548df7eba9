// Package conn is how a command reaches the sandbox it runs in: the API
// client, the sandbox's name, and a way to act on its current session that
// resumes a stopped sandbox. Package sandbox builds a Conn for each handle;
// package command runs commands over it.
package conn

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

// Conn is the connection of a sandbox handle.
type Conn struct {
	// Core sends the API calls; its logger is the client's.
	Core *httpcore.Client
	// SandboxName names the sandbox in errors and logs; it may be empty.
	SandboxName string
	// WithSession runs fn against the sandbox's current session. When the
	// API refuses the call because the session stopped, it may resume the
	// sandbox and run fn once more against the new session. Nil means the
	// connection has no current session (only commands named by their
	// session id can be reached).
	WithSession func(ctx context.Context, fn func(sessionID string) error) error
	// Reattach says how a command whose stream was cut is followed again.
	Reattach ReattachPolicy
}

// ReattachPolicy configures re-attachment to a command whose stream (the
// attached run, its logs or a wait) ended without proving that the command
// finished, as hosted Vercel's edge does to streams older than about six
// minutes. The command is never run again: its logs are replayed and the
// bytes already delivered skipped, or the wait is repeated.
type ReattachPolicy struct {
	// Disabled turns re-attachment off: a cut stream ends the call with
	// an error matching ErrStreamEnded.
	Disabled bool
	// OnReattach, if set, is called before each re-attachment. Every
	// re-attachment is also logged at level Info.
	OnReattach func(ReattachEvent)
}

// ReattachEvent describes one re-attachment about to happen.
type ReattachEvent struct {
	SandboxName string
	SessionID   string
	CommandID   string
	// Op is what was cut: "run" (an attached run), "logs" or "wait".
	Op string
	// Attempt counts the re-attachments of this call, 1 for the first.
	Attempt int
	// Delivered is how many output bytes were delivered before the cut;
	// they are skipped when the logs are replayed.
	Delivered int64
	// Err is how the stream ended, or nil when it ended cleanly while the
	// command still ran.
	Err error
}

// SessionPath is the API path of a session.
func SessionPath(sessionID string) string { return "/v2/sandboxes/sessions/" + sessionID }

// ValidateID refuses an id the API would not accept, naming field, before
// it is put in a path.
func ValidateID(field, id string) error {
	if id == "" {
		return apierr.Invalid(field, "empty")
	}
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return apierr.Invalid(field, "%q is not a valid id", id)
		}
	}
	return nil
}
