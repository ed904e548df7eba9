// Package errmsg builds the errors of the credential packages: a fixed
// message, kept as written (the official SDK's capitalisation included),
// that may wrap a sentinel and a cause.
package errmsg

// Error is an error with a fixed message, optionally wrapping a sentinel
// (for errors.Is) and a cause (printed after the message).
type Error struct {
	Msg      string
	Sentinel error
	Cause    error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Msg + ": " + e.Cause.Error()
	}
	return e.Msg
}

// Unwrap returns the sentinel and the cause, those that are set.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Sentinel != nil {
		errs = append(errs, e.Sentinel)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}
