// Package backend chooses where the example programs run their sandboxes:
// on Vercel when credentials are found in the environment, and otherwise on
// an embedded local server (package sandbox/local with the hostexec executor) that
// runs commands as processes on this machine, without isolation.
//
// It also holds Prefixed, the line-prefixing writer the examples use to
// indent streamed output.
package backend

import (
	"context"
	"fmt"
	"io"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// Backend is the API an example talks to: Vercel or the embedded local
// server. Close it when done; closing the local server stops every sandbox
// it runs and kills their processes.
type Backend struct {
	creds auth.Provider // Vercel; nil when local

	srv *local.Server // local; nil on Vercel
}

// Open returns the Vercel backend when credentials are found in the
// environment (see vercelcli.Default) and forceLocal is false; otherwise it
// starts the embedded local server on a loopback port. It says which on w,
// and for the local server that commands run without isolation.
func Open(ctx context.Context, w io.Writer, forceLocal bool) (*Backend, error) {
	return open(ctx, w, forceLocal, vercelcli.Default(auth.DefaultOptions{}))
}

// open is Open with the credentials to look for.
func open(ctx context.Context, w io.Writer, forceLocal bool, creds auth.Provider) (*Backend, error) {
	if !forceLocal {
		if _, err := creds.Credentials(ctx); err == nil {
			fmt.Fprintln(w, "using Vercel (credentials found in the environment)")
			return &Backend{creds: creds}, nil
		}
	}
	// The examples make their clients with NewClient, as another process
	// would, rather than use the one Listen returns.
	srv, _, err := local.Listen(ctx, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	if err != nil {
		return nil, fmt.Errorf("starting the embedded local server: %w", err)
	}
	fmt.Fprintf(w, "no Vercel credentials in use: using the embedded local server at %s\n", srv.URL())
	fmt.Fprintln(w, "(it runs commands as local processes on this machine, without isolation)")
	return &Backend{srv: srv}, nil
}

// Local reports whether b is the embedded local server.
func (b *Backend) Local() bool { return b.srv != nil }

// URL is the base URL of the API: the embedded server's address, or
// sandbox.DefaultBaseURL for Vercel.
func (b *Backend) URL() string {
	if b.srv == nil {
		return sandbox.DefaultBaseURL
	}
	return b.srv.URL()
}

// NewClient returns a new, independent client for b, as another process
// would build one. opts are applied after the backend's own (base URL and
// credentials), so they can add to or override them.
func (b *Backend) NewClient(opts ...sandbox.Option) (*sandbox.Client, error) {
	var base []sandbox.Option
	if b.srv == nil {
		base = []sandbox.Option{sandbox.WithCredentials(b.creds)}
	} else {
		base = []sandbox.Option{sandbox.WithBaseURL(b.srv.URL()), sandbox.WithToken(b.srv.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID)}
	}
	return sandbox.NewClient(append(base, opts...)...)
}

// Close shuts the embedded local server down: it stops its sandboxes,
// kills their processes and returns once the server's goroutines have
// ended. It does nothing for Vercel. Close may be called more than once.
func (b *Backend) Close() {
	if b.srv != nil {
		b.srv.Close()
	}
}
