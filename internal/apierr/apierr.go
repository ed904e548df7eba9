// Package apierr is the module's internal shorthand for the error types of
// package sandboxerr and the sentinels they match, and the home of the
// helpers that make them.
package apierr

import (
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/sentinel"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
)

// The error types, under their internal names.
type (
	Error                 = sandboxerr.APIError
	RateLimit             = sandboxerr.RateLimit
	OutcomeUnknownError   = sandboxerr.OutcomeUnknownError
	StreamError           = sandboxerr.StreamError
	InputError            = sandboxerr.InputError
	OutputLostError       = sandboxerr.OutputLostError
	DecodeError           = sandboxerr.DecodeError
	ResponseTooLargeError = sandboxerr.ResponseTooLargeError
	RepeatedCursorError   = sandboxerr.RepeatedCursorError
	InsecureURLError      = sandboxerr.InsecureURLError
)

// The sentinels, under their internal names.
var (
	ErrNotFound           = sentinel.ErrNotFound
	ErrGone               = sentinel.ErrGone
	ErrStopping           = sentinel.ErrStopping
	ErrRateLimited        = sentinel.ErrRateLimited
	ErrUnauthorized       = sentinel.ErrUnauthorized
	ErrForbidden          = sentinel.ErrForbidden
	ErrBadRequest         = sentinel.ErrBadRequest
	ErrConflict           = sentinel.ErrConflict
	ErrServer             = sentinel.ErrServer
	ErrUnknownResult      = sentinel.ErrUnknownResult
	ErrStreamEnded        = sentinel.ErrStreamEnded
	ErrInvalidInput       = sentinel.ErrInvalidInput
	ErrSnapshotNotFound   = sentinel.ErrSnapshotNotFound
	ErrExecutableNotFound = sentinel.ErrExecutableNotFound
	ErrOutputLost         = sentinel.ErrOutputLost
	ErrDecode             = sentinel.ErrDecode
	ErrResponseTooLarge   = sentinel.ErrResponseTooLarge
	ErrRepeatedCursor     = sentinel.ErrRepeatedCursor
	ErrInsecureURL        = sentinel.ErrInsecureURL
)

// Invalid returns an *InputError.
func Invalid(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
