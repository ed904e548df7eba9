package local

import (
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Fixed team and project of the clients Client returns.
const (
	TeamID    = "team_sandboxtest"
	ProjectID = "prj_sandboxtest"
)

// Client returns a *sandbox.Client aimed at the server, with the server's
// token, fast retries (so fault tests do not wait) and the given options
// applied after those defaults.
func (s *Server) Client(opts ...sandbox.Option) *sandbox.Client {
	base := []sandbox.Option{
		sandbox.WithBaseURL(s.URL()),
		sandbox.WithToken(s.Token()), sandbox.WithTeam(TeamID), sandbox.WithProject(ProjectID),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}),
	}
	c, err := sandbox.NewClient(append(base, opts...)...)
	if err != nil {
		// Only a bad option given by the caller can get here.
		panic("local: Client: " + err.Error())
	}
	return c
}
