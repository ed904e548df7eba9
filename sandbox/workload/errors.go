package workload

import (
	"context"
	"errors"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// ErrorCode is a stable, machine-readable error code. Codes never change meaning
// between releases; store them, switch on them, show them to support staff.
type ErrorCode string

// Error codes.
const (
	// CodeCreationFailed: no sandbox could be created (after retries).
	CodeCreationFailed ErrorCode = "SANDBOX_CREATION_FAILED"
	// CodeTimeout: the workload ran out of time (overall deadline or a
	// command's timeout).
	CodeTimeout ErrorCode = "SANDBOX_TIMEOUT"
	// CodeSetupFailed: a setup step (package install, file upload) failed.
	CodeSetupFailed ErrorCode = "SANDBOX_SETUP_FAILED"
	// CodeExecutionFailed: the workload itself (the agent) failed or
	// produced output that could not be understood.
	CodeExecutionFailed ErrorCode = "AGENT_EXECUTION_FAILED"
	// CodeInactive: the command produced no output for too long and was
	// killed.
	CodeInactive ErrorCode = "AGENT_INACTIVE"
	// CodeInvalidInput: the request was refused before anything ran.
	CodeInvalidInput ErrorCode = "INVALID_INPUT"
	// CodeStopped: the work was stopped on request.
	CodeStopped ErrorCode = "TASK_STOPPED"
	// CodeTaskEnded: a step was refused because its task had already
	// ended (stopped, timed out or inactive). The step did not run.
	CodeTaskEnded ErrorCode = "TASK_ENDED"
	// CodeCancelled: the caller's context was cancelled.
	CodeCancelled ErrorCode = "CANCELLED"
	// CodeStopFailed: the sandbox could not be stopped.
	CodeStopFailed ErrorCode = "SANDBOX_STOP_FAILED"
)

var defaultMessages = map[ErrorCode]string{
	CodeCreationFailed:  "The sandbox could not be created. Please try again later.",
	CodeTimeout:         "The task took too long and was stopped.",
	CodeSetupFailed:     "The sandbox could not be prepared.",
	CodeExecutionFailed: "The task failed while running.",
	CodeInactive:        "The task stopped responding and was stopped.",
	CodeInvalidInput:    "The request is invalid.",
	CodeStopped:         "The task was stopped.",
	CodeTaskEnded:       "The task has already ended.",
	CodeCancelled:       "The task was cancelled.",
	CodeStopFailed:      "The sandbox could not be stopped.",
}

// Message returns the default user-facing message of the code.
func (c ErrorCode) Message() string {
	if m, ok := defaultMessages[c]; ok {
		return m
	}
	return "The task failed."
}

// Error is a workload failure with a stable code.
//
// Message is safe to show to end users: it is one of this package's fixed
// texts or text the caller wrote (for invalid input, it names the field).
// It never contains secrets or text from the server. Err is the cause, for
// logs and errors.Is/As; Error() includes it.
type Error struct {
	Code    ErrorCode
	Message string
	Err     error
}

// Sentinels for errors.Is: an *Error matches the sentinel of its Code.
var (
	ErrCreationFailed  = &Error{Code: CodeCreationFailed}
	ErrTimeout         = &Error{Code: CodeTimeout}
	ErrSetupFailed     = &Error{Code: CodeSetupFailed}
	ErrExecutionFailed = &Error{Code: CodeExecutionFailed}
	ErrInactive        = &Error{Code: CodeInactive}
	ErrInvalidInput    = &Error{Code: CodeInvalidInput}
	ErrStopped         = &Error{Code: CodeStopped}
	ErrTaskEnded       = &Error{Code: CodeTaskEnded}
	ErrCancelled       = &Error{Code: CodeCancelled}
	ErrStopFailed      = &Error{Code: CodeStopFailed}
)

// Error implements error: "CODE: message: cause".
func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.UserMessage()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// UserMessage returns Message, or the code's default message when Message
// is empty.
func (e *Error) UserMessage() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Code.Message()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, ErrTimeout) holds for every timeout.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorCodeOf returns the ErrorCode of the first *Error in err's chain,
// or "" when there is none.
func ErrorCodeOf(err error) ErrorCode {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(code ErrorCode, err error) *Error {
	return &Error{Code: code, Err: err}
}

// classify wraps err in an *Error. An err that already is (or wraps) an
// *Error keeps its code; deadlines, cancellation and inactivity get their
// own codes; everything else gets fallback.
func classify(ctx context.Context, fallback ErrorCode, err error) error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		return err
	}
	var ie *command.InactivityError
	switch {
	case errors.As(err, &ie):
		return newError(CodeInactive, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return newError(CodeTimeout, err)
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return newError(CodeCancelled, err)
	case errors.Is(err, sandbox.ErrInvalidInput):
		return newError(CodeInvalidInput, err)
	}
	return newError(fallback, err)
}
