// Package apierr defines the error types shared by every package of the
// module. The public packages re-export them (sandbox.APIError and friends).
package apierr

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors matched with errors.Is against *Error and the other types.
var (
	ErrNotFound      = errors.New("not found")                   // 404
	ErrGone          = errors.New("sandbox session stopped")     // 410
	ErrStopping      = errors.New("sandbox session is stopping") // 422 sandbox_stopping / sandbox_snapshotting
	ErrRateLimited   = errors.New("rate limited")                // 429
	ErrUnauthorized  = errors.New("unauthorized")                // 401
	ErrForbidden     = errors.New("forbidden")                   // 403
	ErrBadRequest    = errors.New("bad request")                 // 400
	ErrConflict      = errors.New("conflict")                    // 409
	ErrServer        = errors.New("server error")                // 5xx
	ErrUnknownResult = errors.New("outcome unknown")             // see OutcomeUnknownError
	ErrStreamEnded   = errors.New("stream ended before its final frame")
	ErrInvalidInput  = errors.New("invalid input")
	// ErrSnapshotNotFound matches 400 (or 410) snapshot_not_found: the
	// sandbox cannot be resumed, because nothing of it was kept (hosted
	// Vercel answers so when a non-persistent sandbox is resumed).
	ErrSnapshotNotFound = errors.New("sandbox cannot be resumed: its snapshot was not found")
	// ErrExecutableNotFound matches 400 executable_not_found: the command
	// did not start, so it has no exit code.
	ErrExecutableNotFound = errors.New("executable not found")
	// ErrOutputLost matches OutputLostError: output of a command that
	// cannot be delivered whole.
	ErrOutputLost = errors.New("command output no longer available")
)

// OutputLostError reports output of a command that cannot be delivered
// whole, so output beyond what was delivered may be missing: the logs of a
// finished command kept answering 404 (hosted Vercel's logs race the
// command's cleanup), or a replay of the logs did not match the output
// already delivered (it was shorter, or its bytes differ). Nothing is
// invented: the exit code is the one the API reported, and a replay that
// disagrees is not delivered.
type OutputLostError struct {
	SessionID string
	CommandID string
	// ExitCode is the command's exit code, or -1 when it was not known
	// to have finished.
	ExitCode int
	// Delivered counts the output bytes delivered, of both streams.
	Delivered int64
	// Stream is "stdout" or "stderr" when a replay of that stream did
	// not match what was delivered of it; empty when the logs were lost.
	Stream string
	// Offset is the byte offset in Stream where the replay stopped
	// matching: the replay's length when it ended short of what was
	// delivered, or the length of the delivered output it differs from.
	Offset int64
	// Err is the last answer of the logs endpoint, if any.
	Err error
}

func (e *OutputLostError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vercel sandbox: output of command %s (session %s", e.CommandID, e.SessionID)
	if e.ExitCode >= 0 {
		fmt.Fprintf(&b, ", exit code %d", e.ExitCode)
	}
	if e.Stream != "" {
		fmt.Fprintf(&b, "): the log replay of %s does not match the output delivered, at byte %d; %d bytes delivered",
			e.Stream, e.Offset, e.Delivered)
	} else {
		fmt.Fprintf(&b, ") no longer available after %d bytes", e.Delivered)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the last answer of the logs endpoint.
func (e *OutputLostError) Unwrap() error { return e.Err }

// Is matches ErrOutputLost.
func (e *OutputLostError) Is(target error) bool { return target == ErrOutputLost }

// Error is a non-2xx answer of the API.
type Error struct {
	StatusCode  int           // HTTP status
	Code        string        // error.code of the body, when JSON
	Message     string        // error.message of the body, or an excerpt of a non-JSON body
	RequestID   string        // X-Vercel-Id header
	Method      string        // request method
	Path        string        // request path, without query (no secrets)
	SandboxName string        // sandbox the call addressed, when known
	SessionID   string        // session the call addressed, when known
	RetryAfter  time.Duration // parsed Retry-After, when the server sent one
	Attempts    int           // how many times the request was sent
	// RateLimit is what the x-ratelimit-* headers said, when present.
	RateLimit *RateLimit
}

// RateLimit is the rate-limit window an answer reported in its
// x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset headers.
type RateLimit struct {
	Limit     int       // requests allowed in the window
	Remaining int       // requests left in the window
	Reset     time.Time // when the window resets; zero when not sent
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vercel sandbox: %s %s: status %d", e.Method, e.Path, e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" ")
		b.WriteString(t)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Is reports whether target is the sentinel of this error's status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrGone:
		return e.StatusCode == http.StatusGone
	case ErrStopping:
		return e.StatusCode == http.StatusUnprocessableEntity &&
			(e.Code == "sandbox_stopping" || e.Code == "sandbox_snapshotting")
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrConflict:
		return e.StatusCode == http.StatusConflict
	case ErrServer:
		return e.StatusCode >= 500
	case ErrSnapshotNotFound:
		return e.Code == "snapshot_not_found"
	case ErrExecutableNotFound:
		return e.Code == "executable_not_found"
	}
	return false
}

// OutcomeUnknownError reports a request that is not safe to repeat (create,
// run command, extend, snapshot) and failed in a way that leaves open whether
// the server acted on it. It is never retried automatically; it carries what
// is needed to find out and recover.
type OutcomeUnknownError struct {
	Op          string // what was attempted, e.g. "run command"
	Method      string
	Path        string
	SandboxName string
	SessionID   string
	Err         error // the underlying transport error or *Error (5xx)
}

// Error implements error.
func (e *OutcomeUnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vercel sandbox: %s: outcome unknown, the request was not repeated", e.Op)
	if e.SandboxName != "" {
		fmt.Fprintf(&b, " (sandbox %s", e.SandboxName)
		if e.SessionID != "" {
			fmt.Fprintf(&b, ", session %s", e.SessionID)
		}
		b.WriteString(")")
	} else if e.SessionID != "" {
		fmt.Fprintf(&b, " (session %s)", e.SessionID)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Is matches ErrUnknownResult.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrUnknownResult }

// StreamError is an NDJSON stream that failed after its 200 answer: an error
// frame sent by the server, or a stream that ended before its final frame
// (Code "stream_ended_early").
type StreamError struct {
	Code      string // error frame code, or "stream_ended_early"
	Message   string
	SessionID string
	CommandID string
	Err       error // underlying read error, if any
}

// Error implements error.
func (e *StreamError) Error() string {
	var b strings.Builder
	b.WriteString("vercel sandbox: stream error")
	if e.CommandID != "" {
		fmt.Fprintf(&b, " (command %s)", e.CommandID)
	}
	fmt.Fprintf(&b, ": %s", e.Code)
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the underlying read error.
func (e *StreamError) Unwrap() error { return e.Err }

// Is matches ErrStreamEnded for streams cut short, and ErrGone for the
// frames that say the session ended: sandbox_stopped, and
// sandbox_stream_closed, which hosted Vercel sends when the session's
// timeout fires during a command.
func (e *StreamError) Is(target error) bool {
	switch target {
	case ErrStreamEnded:
		return e.Code == "stream_ended_early"
	case ErrGone:
		return e.Code == "sandbox_stopped" || e.Code == "sandbox_stream_closed"
	}
	return false
}

// InputError is invalid input refused before any request was sent.
type InputError struct {
	Field  string // the parameter at fault, e.g. "Ports[3]"
	Reason string
}

// Error implements error.
func (e *InputError) Error() string {
	if e.Field == "" {
		return "vercel sandbox: invalid input: " + e.Reason
	}
	return "vercel sandbox: invalid " + e.Field + ": " + e.Reason
}

// Is matches ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// Invalid returns an *InputError.
func Invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ErrDecode matches *DecodeError.
var ErrDecode = errors.New("malformed response")

// DecodeError is a 2xx answer whose body could not be decoded.
type DecodeError struct {
	Method     string
	Path       string
	StatusCode int
	RequestID  string
	Excerpt    string // the start of the body, bounded
	Err        error
}

// Error implements error.
func (e *DecodeError) Error() string {
	s := fmt.Sprintf("vercel sandbox: %s %s: status %d: malformed response: %v", e.Method, e.Path, e.StatusCode, e.Err)
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Unwrap returns the decoding error.
func (e *DecodeError) Unwrap() error { return e.Err }

// Is matches ErrDecode.
func (e *DecodeError) Is(target error) bool { return target == ErrDecode }
