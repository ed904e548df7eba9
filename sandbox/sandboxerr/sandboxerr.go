// Package sandboxerr defines the error types that the client packages
// return: a non-2xx answer of the API ([APIError]), a call whose outcome is
// unknown, a stream that ended early, output that cannot be delivered
// whole, input refused before any request, and the limits the client sets
// on what a server may make it do.
//
// Package sandbox re-exports every type here under the same name
// (sandbox.APIError is sandboxerr.APIError), as package os re-exports the
// errors of io/fs, together with the sentinel errors that the types match
// with errors.Is (sandbox.ErrNotFound and the others). A program need not
// import this package: errors.As works with either name.
package sandboxerr

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/sentinel"
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

// Is matches sandbox.ErrOutputLost.
func (e *OutputLostError) Is(target error) bool { return target == sentinel.ErrOutputLost }

// APIError is a non-2xx answer of the API.
type APIError struct {
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
func (e *APIError) Error() string {
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

// Is reports whether target is the sentinel of this error's status or
// code: sandbox.ErrNotFound (404), ErrGone (410), ErrStopping (422
// sandbox_stopping or sandbox_snapshotting), ErrRateLimited (429),
// ErrUnauthorized (401), ErrForbidden (403), ErrBadRequest (400),
// ErrConflict (409), ErrServer (5xx), ErrSnapshotNotFound
// (snapshot_not_found) or ErrExecutableNotFound (executable_not_found).
func (e *APIError) Is(target error) bool {
	switch target {
	case sentinel.ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case sentinel.ErrGone:
		return e.StatusCode == http.StatusGone
	case sentinel.ErrStopping:
		return e.StatusCode == http.StatusUnprocessableEntity &&
			(e.Code == "sandbox_stopping" || e.Code == "sandbox_snapshotting")
	case sentinel.ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case sentinel.ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case sentinel.ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case sentinel.ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case sentinel.ErrConflict:
		return e.StatusCode == http.StatusConflict
	case sentinel.ErrServer:
		return e.StatusCode >= 500
	case sentinel.ErrSnapshotNotFound:
		return e.Code == "snapshot_not_found"
	case sentinel.ErrExecutableNotFound:
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
	Err         error // the underlying transport error or *APIError (5xx)
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

// Is matches sandbox.ErrUnknownResult.
func (e *OutcomeUnknownError) Is(target error) bool { return target == sentinel.ErrUnknownResult }

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

// Is matches sandbox.ErrStreamEnded for streams cut short, and
// sandbox.ErrGone for the frames that say the session ended:
// sandbox_stopped, and sandbox_stream_closed, which hosted Vercel sends
// when the session's timeout fires during a command.
func (e *StreamError) Is(target error) bool {
	switch target {
	case sentinel.ErrStreamEnded:
		return e.Code == "stream_ended_early"
	case sentinel.ErrGone:
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

// Is matches sandbox.ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == sentinel.ErrInvalidInput }

// Invalid returns an *InputError.
func Invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

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

// Is matches sandbox.ErrDecode.
func (e *DecodeError) Is(target error) bool { return target == sentinel.ErrDecode }

// ResponseTooLargeError is an answer that was to be read whole (a JSON
// answer, decompressed if the server compressed it) and was longer than
// the limit; it was not read further. Streams (command output, logs, file
// downloads) have no such limit. A 2xx status means the server did what
// was asked: only its answer was refused.
type ResponseTooLargeError struct {
	Op         string // what the call does, e.g. "list sandboxes"
	Method     string
	Path       string // the path, without query
	StatusCode int
	Limit      int64 // bytes
}

// Error names the call and the limit.
func (e *ResponseTooLargeError) Error() string {
	op := ""
	if e.Op != "" {
		op = e.Op + ": "
	}
	return fmt.Sprintf("vercel sandbox: %s%s %s: status %d: answer longer than the limit of %d bytes; not read",
		op, e.Method, e.Path, e.StatusCode, e.Limit)
}

// Is matches sandbox.ErrResponseTooLarge.
func (e *ResponseTooLargeError) Is(target error) bool { return target == sentinel.ErrResponseTooLarge }

// RepeatedCursorError is a listing whose server sent, as the cursor of
// the next page, one it had already sent: following it would loop. No
// further request was sent.
type RepeatedCursorError struct {
	Op string // e.g. "list sandboxes"
	// Cursor is the repeated cursor, as the server sent it. It is left
	// out of Error: a server's text may hold anything.
	Cursor string
	Pages  int // pages received, the one repeating the cursor included
}

// Error names the listing and the page.
func (e *RepeatedCursorError) Error() string {
	return fmt.Sprintf("vercel sandbox: %s: page %d repeats the cursor of an earlier page; stopped", e.Op, e.Pages)
}

// Is matches sandbox.ErrRepeatedCursor.
func (e *RepeatedCursorError) Is(target error) bool { return target == sentinel.ErrRepeatedCursor }

// InsecureURLError is a URL refused before any request because it would
// send credentials in clear text: plain http to a host other than a
// literal loopback address (127.0.0.0/8, ::1) or the name localhost, or to
// localhost through a transport that might look the name up.
type InsecureURLError struct {
	Field  string // the option or field that gave the URL, e.g. "BaseURL"
	Scheme string
	Host   string
	Reason string // empty: the host is not loopback
}

// Error names the field and the host.
func (e *InsecureURLError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = "plain http is only allowed to 127.0.0.0/8, ::1 or localhost"
	}
	return fmt.Sprintf("vercel sandbox: invalid %s: %s://%s would carry credentials in clear text: %s", e.Field, e.Scheme, e.Host, reason)
}

// Is matches sandbox.ErrInsecureURL and sandbox.ErrInvalidInput.
func (e *InsecureURLError) Is(target error) bool {
	return target == sentinel.ErrInsecureURL || target == sentinel.ErrInvalidInput
}
