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
