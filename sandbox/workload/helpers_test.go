package workload_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

// fastRetry keeps retry tests quick: 3 attempts, waits of a few ms.
var fastRetry = sandbox.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, "/v3/sandboxes") || strings.HasSuffix(r.URL.Path, "/v2/sandboxes"))
}

func isStop(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/stop")
}

func respond(r *http.Request, status int, body string, hdr ...string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h, Request: r,
		Body: http.NoBody, ContentLength: 0, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
}

// faults answers the first n create requests with status without passing
// them on (pass=false) or after the server has acted on them (pass=true).
type faults struct {
	n      atomic.Int32
	status int
	pass   bool
	sent   atomic.Int32 // create requests seen
}

func (f *faults) middleware(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
	if !isCreate(req) {
		return next(req)
	}
	f.sent.Add(1)
	if f.n.Add(-1) < 0 {
		return next(req)
	}
	if f.pass {
		resp, err := next(req)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
	}
	return respond(req, f.status, ""), nil
}

// newClient returns a client of srv with fastRetry.
func newClient(t *testing.T, srv *sandboxtest.Server, mw ...sandbox.Middleware) *sandbox.Client {
	t.Helper()
	return newClientWith(t, srv, fastRetry, mw...)
}

// newClientWith returns a client of srv with the retry policy rp.
func newClientWith(t *testing.T, srv *sandboxtest.Server, rp sandbox.RetryPolicy, mw ...sandbox.Middleware) *sandbox.Client {
	t.Helper()
	return srv.Client(sandbox.WithRetryPolicy(rp), sandbox.WithMiddleware(mw...))
}

// recorder is an Observer that keeps every event.
type recorder struct {
	starts, ends chan workload.PhaseEvent
}

func newRecorder() *recorder {
	return &recorder{starts: make(chan workload.PhaseEvent, 100), ends: make(chan workload.PhaseEvent, 100)}
}

func (r *recorder) PhaseStart(_ context.Context, e workload.PhaseEvent) { r.starts <- e }
func (r *recorder) PhaseEnd(_ context.Context, e workload.PhaseEvent)   { r.ends <- e }

func (r *recorder) ended() []workload.PhaseEvent {
	var out []workload.PhaseEvent
	for {
		select {
		case e := <-r.ends:
			out = append(out, e)
		default:
			return out
		}
	}
}

func phases(evs []workload.PhaseEvent) []string {
	var out []string
	for _, e := range evs {
		s := string(e.Phase)
		if e.Step != "" {
			s += ":" + e.Step
		}
		out = append(out, s+"="+e.Outcome())
	}
	return out
}

func runningSessions(srv *sandboxtest.Server) int {
	n := 0
	for _, s := range srv.Sessions() {
		if s.Status == "running" {
			n++
		}
	}
	return n
}
