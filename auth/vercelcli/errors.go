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

	// ErrInvalidID is returned, before any request or command, when a
	// project or team ID does not match ^[A-Za-z0-9][A-Za-z0-9._-]*$: it
	// would be unsafe in a command line, a cache file name or a URL path.
	ErrInvalidID = errors.New("invalid project or team ID")
)
