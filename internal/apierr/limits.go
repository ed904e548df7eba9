package apierr

import (
	"errors"
	"fmt"
)

// Sentinels of the limits the client sets on what a server may make it do.
var (
	// ErrResponseTooLarge matches ResponseTooLargeError.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrRepeatedCursor matches RepeatedCursorError.
	ErrRepeatedCursor = errors.New("pagination cursor repeated")
	// ErrInsecureURL matches InsecureURLError.
	ErrInsecureURL = errors.New("credentials would travel in clear text")
)

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

// Is matches ErrResponseTooLarge.
func (e *ResponseTooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

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

// Is matches ErrRepeatedCursor.
func (e *RepeatedCursorError) Is(target error) bool { return target == ErrRepeatedCursor }

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

// Is matches ErrInsecureURL and ErrInvalidInput.
func (e *InsecureURLError) Is(target error) bool {
	return target == ErrInsecureURL || target == ErrInvalidInput
}
