package local

import (
	"context"
	"fmt"
	"net"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Fixed team and project of the client Listen returns; the server accepts
// any team and project unless WithTeam or WithProject say otherwise.
const (
	TeamID    = "team_sandboxtest"
	ProjectID = "prj_sandboxtest"
)

// Listen makes a server with opts, as New does, serves it on a loopback
// port of its own (127.0.0.1:0) and returns it with a client aimed at it:
// the client carries the server's token (see Token), TeamID and
// ProjectID. Close the server when done; Close stops every sandbox, kills
// their processes and returns once the server's goroutines have ended.
// ctx bounds the start only.
//
// More clients, and clients in other processes or languages, use URL and
// Token:
//
//	sandbox.NewClient(sandbox.WithBaseURL(srv.URL()), sandbox.WithToken(srv.Token()),
//		sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
func Listen(ctx context.Context, opts ...Option) (*Server, *sandbox.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	srv, err := New(opts...)
	if err != nil {
		return nil, nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err == nil {
		err = srv.Start(ln)
		if err != nil {
			_ = ln.Close()
		}
	}
	if err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("local: %w", err)
	}
	client, err := sandbox.NewClient(
		sandbox.WithBaseURL(srv.URL()), sandbox.WithToken(srv.Token()),
		sandbox.WithTeam(TeamID), sandbox.WithProject(ProjectID),
	)
	if err != nil { // cannot happen: every option is the server's own
		srv.Close()
		return nil, nil, fmt.Errorf("local: %w", err)
	}
	return srv, client, nil
}
