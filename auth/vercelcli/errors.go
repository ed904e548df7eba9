package vercelcli

import "errors"

// Sentinel errors, matched with errors.Is.
var (
	// ErrProjectNotLinked is returned when no .vercel/project.json can be
	// found to decide which project to mint a token for.
	ErrProjectNotLinked = errors.New("project not linked")

	// ErrCLILoginRequired is returned when the Vercel CLI has no usable login
	// (auth.json has no token, or it has expired).
	ErrCLILoginRequired = errors.New("no usable Vercel CLI login: run `vercel login`")

	// ErrInvalidID is returned when a project or team ID would be unsafe to
	// pass to the vercel command line tool.
	ErrInvalidID = errors.New("invalid project or team ID")
)

// cliError is an error with a fixed message, optionally wrapping a cause and
// a sentinel. It lets messages keep the capitalisation of the TypeScript SDK.
type cliError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *cliError) Error() string {
	if e.cause != nil {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

func (e *cliError) Unwrap() []error {
	var errs []error
	if e.sentinel != nil {
		errs = append(errs, e.sentinel)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}
