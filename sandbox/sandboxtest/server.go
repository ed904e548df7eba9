package sandboxtest

import (
	"net"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

// Server is a local Vercel Sandbox API serving one test, with fault
// injection. The methods of local.Server (URL, Token, inspection, ...)
// are promoted.
type Server struct {
	*local.Server
	faults *fault.Injector
	t      testing.TB
}

// NewServer starts a local API on 127.0.0.1 for the test t and closes it
// when the test ends, killing every process and ending every goroutine it
// started. Commands are played by a Script (see Server.Script) unless opts
// set another executor with local.WithExecutor. It accepts any bearer
// token (local.WithAnyToken) unless opts give one with local.WithToken.
// Faults injected with Server.Inject shape its answers; the control
// endpoint of package fault (fault.ControlPrefix) is served too.
func NewServer(t testing.TB, opts ...local.Option) *Server {
	t.Helper()
	inj := fault.NewInjector()
	base := append([]local.Option{local.WithExecutor(NewScript()), local.WithAnyToken()}, inj.Options()...)
	srv, err := local.New(append(base, opts...)...)
	if err != nil {
		t.Fatalf("sandboxtest.NewServer: %v", err)
	}
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sandboxtest.NewServer: %v", err)
	}
	if err := srv.Start(ln); err != nil {
		ln.Close()
		t.Fatalf("sandboxtest.NewServer: %v", err)
	}
	return &Server{Server: srv, faults: inj, t: t}
}

// Client returns a *sandbox.Client aimed at the server, with the server's
// token, local.TeamID and local.ProjectID, and fast retries (so that fault
// tests do not wait); opts apply after those defaults. An option the
// client refuses fails the test.
func (s *Server) Client(opts ...sandbox.Option) *sandbox.Client {
	s.t.Helper()
	base := []sandbox.Option{
		sandbox.WithBaseURL(s.URL()),
		sandbox.WithToken(s.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond}),
	}
	c, err := sandbox.NewClient(append(base, opts...)...)
	if err != nil {
		s.t.Fatalf("sandboxtest: Server.Client: %v", err)
	}
	return c
}

// Inject adds a fault that shapes the answers to the requests it matches,
// from now on. It panics when f is invalid (see fault.Fault.Validate).
func (s *Server) Inject(f fault.Fault) *fault.Handle { return s.faults.Inject(f) }

// Faults returns the faults injected now, in injection order.
func (s *Server) Faults() []*fault.Handle { return s.faults.Faults() }

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() { s.faults.ClearFaults() }

// Script returns the scripted executor that plays the server's commands,
// so that a test can register handlers:
// srv.Script().Handle(sandboxtest.MatchName("ls"), ...). It returns nil
// when the server was given an executor other than a *Script.
func (s *Server) Script() *Script {
	sc, _ := s.Executor().(*Script)
	return sc
}

// RequestsTo returns the requests received so far, in arrival order, whose
// method and path match: method "" or "*" matches any, and pattern is a
// path pattern as in fault.Fault.Path ("/v2/sandboxes/sessions/*/cmd",
// "/v2/sandboxes/**"), matched with and without the /api prefix.
func (s *Server) RequestsTo(method, pattern string) []local.Request {
	match := fault.Fault{Method: method, Path: pattern}
	var out []local.Request
	for _, r := range s.Requests() {
		if match.Matches(r.Method, r.Path) {
			out = append(out, r)
		}
	}
	return out
}
