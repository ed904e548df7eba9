package pty

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

var (
	// ErrStreamEnded matches a session whose connection ended before the
	// exit frame (see DisconnectError). It is the value that packages
	// sandbox and command export under the same name.
	ErrStreamEnded = apierr.ErrStreamEnded
	// ErrClosed is what Wait returns after Close, and what Write and Resize
	// return once the session has ended.
	ErrClosed = errors.New("pty: session closed")
)

// DisconnectError reports a session whose connection ended before the
// server sent the command's exit code: the network failed, the server
// closed the WebSocket, or the exit frame had no code. The command may
// have ended or may still run; no exit code is invented.
type DisconnectError struct {
	// CloseStatus is the WebSocket close code the server sent (1000 normal,
	// 1011 internal error, ...), or 0 when the connection ended without one.
	CloseStatus int
	// Reason is the close reason the server gave, or what was wrong.
	Reason string
	// Err is the transport error, if any.
	Err error
}

// Error implements error.
func (e *DisconnectError) Error() string {
	s := "pty: connection ended before the command exited"
	if e.CloseStatus != 0 {
		s += fmt.Sprintf(" (close status %d)", e.CloseStatus)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the transport error.
func (e *DisconnectError) Unwrap() error { return e.Err }

// Is matches ErrStreamEnded.
func (e *DisconnectError) Is(target error) bool { return target == ErrStreamEnded }

// DialError reports a WebSocket handshake that failed. Neither its fields,
// its message nor the errors it wraps hold the ticket's token, in any case
// or encoding.
type DialError struct {
	URL        string // the ticket's URL, without its query
	StatusCode int    // the HTTP status that refused the upgrade, or 0
	// Location is the origin (scheme and host) that a redirect pointed
	// to. A redirect is never followed: the token and the start frame go
	// only to the URL the API named.
	Location string
	Err      error
}

// Error implements error.
func (e *DialError) Error() string {
	s := "pty: connect to " + e.URL
	if e.StatusCode != 0 {
		s += fmt.Sprintf(": status %d", e.StatusCode)
	}
	if e.Location != "" {
		s += ": redirect to " + e.Location + " not followed"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *DialError) Unwrap() error { return e.Err }

// Is matches the sentinels of package sandbox for a refusing status:
// ErrUnauthorized (401), ErrForbidden (403, an unknown or used token),
// ErrNotFound (404) and ErrGone (410, the session stopped).
func (e *DialError) Is(target error) bool {
	switch e.StatusCode {
	case http.StatusUnauthorized:
		return target == apierr.ErrUnauthorized
	case http.StatusForbidden:
		return target == apierr.ErrForbidden
	case http.StatusNotFound:
		return target == apierr.ErrNotFound
	case http.StatusGone:
		return target == apierr.ErrGone
	}
	return false
}
