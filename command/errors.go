package command

import "github.com/sbx-go/vercel-sandbox/internal/apierr"

// Errors of the API that running a command can return, beside ExitError
// and InactivityError. They are the same values and types that package
// sandbox exports under the same names, so either name matches.
var (
	// ErrStreamEnded matches a stream that ended before its final frame:
	// the command may still be running, and no exit code is invented.
	ErrStreamEnded = apierr.ErrStreamEnded
	// ErrUnknownResult matches a start that may or may not have reached
	// the sandbox; see OutcomeUnknownError.
	ErrUnknownResult = apierr.ErrUnknownResult
	// ErrGone matches a session that has stopped, and its commands with it.
	ErrGone = apierr.ErrGone
	// ErrNotFound matches a command or session the API does not know.
	ErrNotFound = apierr.ErrNotFound
	// ErrInvalidInput matches a Cmd, Ref or signal refused before any
	// request; see InputError.
	ErrInvalidInput = apierr.ErrInvalidInput
	// ErrExecutableNotFound matches a command refused because its
	// executable does not exist: it never started and has no exit code.
	ErrExecutableNotFound = apierr.ErrExecutableNotFound
	// ErrOutputLost matches output that cannot be delivered whole; see
	// OutputLostError.
	ErrOutputLost = apierr.ErrOutputLost
)

type (
	// StreamError is a command stream that failed after its 200 answer.
	StreamError = apierr.StreamError
	// OutcomeUnknownError reports a start that failed in a way that leaves
	// open whether the command runs. It is never retried.
	OutcomeUnknownError = apierr.OutcomeUnknownError
	// InputError is invalid input refused before any request.
	InputError = apierr.InputError
	// OutputLostError reports output that cannot be delivered whole: the
	// logs of a finished command kept answering 404, or a replay of them
	// did not match what was delivered (Stream and Offset say where).
	OutputLostError = apierr.OutputLostError
)
