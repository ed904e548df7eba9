// Package sentinel holds the sentinel errors of the module, for
// errors.Is. Package sandbox re-exports each of them (sandbox.ErrNotFound
// and the others); the error types of package sandboxerr match them.
package sentinel

import "errors"

// Sentinel errors matched with errors.Is against the error types.
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
	// ErrDecode matches DecodeError.
	ErrDecode = errors.New("malformed response")
	// ErrResponseTooLarge matches ResponseTooLargeError.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrRepeatedCursor matches RepeatedCursorError.
	ErrRepeatedCursor = errors.New("pagination cursor repeated")
	// ErrInsecureURL matches InsecureURLError.
	ErrInsecureURL = errors.New("credentials would travel in clear text")
)
