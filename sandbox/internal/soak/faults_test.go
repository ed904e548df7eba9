package soak_test

import (
	"net/http"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

// endpoint is a request an operation makes, as a fault matches it.
type endpoint struct {
	method, path string
}

// endpoints returns what an operation of kind requests, narrowed to the
// worker's session and sandbox so that its faults touch no other worker
// (an expired token excepted: the workers share their clients).
func endpoints(kind opKind, sessionID, sandboxName string) []endpoint {
	s := "/v2/sandboxes/sessions/" + sessionID
	common := []endpoint{
		{"*", s + "/**"},                        // any call of the session
		{"GET", "/v2/sandboxes/" + sandboxName}, // the lookup that resumes it
	}
	if kind == opFiles {
		return append(common, endpoint{"POST", s + "/fs/write"}, endpoint{"POST", s + "/fs/read"})
	}
	return append(common,
		endpoint{"POST", s + "/cmd"},       // an attached stream, or a detached start
		endpoint{"GET", s + "/cmd/*/logs"}, // a log stream: replay, follow, re-attachment
		endpoint{"GET", s + "/cmd/*"},      // a wait, or a look at the command
	)
}

// faultKinds are the faults a worker draws from, unless SANDBOX_SOAK_FAULTS
// names some of them.
var faultKinds = []string{"5xx", "429", "429-retry-after", "reset", "cut-dirty", "cut-clean", "stall", "latency", "expire", "expire-token"}

// drawFaults draws 0 to 3 faults for one operation.
//
// A clean cut is drawn at most once an operation, and fires once. The logs
// endpoint has no final frame: a replay that ends cleanly is the whole
// output unless a second reading goes further. Two clean cuts at the same
// byte of a finished command's replay are its end to any client, so the
// soak does not stage them; every loss it reports could have been seen.
// (The edge cuts by time, so a second reading goes further.)
func (w *worker) drawFaults(kind opKind, sessionID, sandboxName string) []fault.Fault {
	n := []int{0, 1, 1, 1, 2, 2, 3}[w.rng.IntN(7)]
	eps := endpoints(kind, sessionID, sandboxName)
	var out []fault.Fault
	clean := false
	for range n {
		ep := eps[w.rng.IntN(len(eps))]
		k := w.o.faultKinds[w.rng.IntN(len(w.o.faultKinds))]
		if k == "cut-clean" {
			if clean {
				continue
			}
			clean = true
		}
		out = append(out, w.fault(k, ep))
	}
	return out
}

// fault builds a fault of kind for ep.
func (w *worker) fault(kind string, ep endpoint) fault.Fault {
	f := fault.Fault{Method: ep.method, Path: ep.path, Times: 1}
	// Only an unsafe POST can tell a fault after its handler from one
	// before; elsewhere it only makes the fault slower.
	afterHandler := ep.method == http.MethodPost && w.rng.IntN(3) == 0
	switch kind {
	case "5xx":
		f.Status = []int{500, 502, 503, 504}[w.rng.IntN(4)]
		f.Times = 1 + w.rng.IntN(2)
		f.AfterHandler = afterHandler
	case "429":
		f = withTarget(fault.RateLimit(1, 0), ep)
	case "429-retry-after":
		f = withTarget(fault.RateLimit(1, time.Second), ep)
	case "reset":
		f.Reset = fault.ResetBeforeHeaders
	case "cut-dirty":
		f.Reset, f.AfterFrames, f.Times = fault.ResetAfterHeaders, w.frames(), 1+w.rng.IntN(2)
	case "cut-clean":
		f.Cut, f.AfterFrames = true, w.frames()
	case "stall":
		f.Stall, f.AfterFrames = w.pause(), w.frames()
	case "latency":
		f.Latency = w.pause()
	case "expire":
		f.Expire, f.AfterHandler = true, afterHandler
	case "expire-token":
		f.ExpireToken, f.AfterHandler = true, afterHandler
	}
	return f
}

func withTarget(f fault.Fault, ep endpoint) fault.Fault {
	f.Method, f.Path = ep.method, ep.path
	return f
}

// frames draws where a body fault acts: at once, early, or well into a
// long stream.
func (w *worker) frames() int {
	switch x := w.rng.IntN(10); {
	case x < 4:
		return w.rng.IntN(4)
	case x < 8:
		return 4 + w.rng.IntN(40)
	default:
		return 40 + w.rng.IntN(400)
	}
}

// pause draws a slow answer: 50 to 400 ms.
func (w *worker) pause() time.Duration {
	return 50*time.Millisecond + time.Duration(w.rng.IntN(350))*time.Millisecond
}

// kindOf names the kind of a fault, for the counts.
func kindOf(f fault.Fault) string {
	k := ""
	switch {
	case f.ExpireToken:
		k = "expire-token"
	case f.Expire:
		k = "expire"
	case f.Status == http.StatusTooManyRequests && f.RetryAfter > 0:
		k = "429-retry-after"
	case f.Status == http.StatusTooManyRequests:
		k = "429"
	case f.Status >= 500:
		k = "5xx"
	case f.Reset == fault.ResetBeforeHeaders:
		k = "reset"
	case f.Reset == fault.ResetAfterHeaders:
		k = "cut-dirty"
	case f.Cut:
		k = "cut-clean"
	case f.Stall > 0:
		k = "stall"
	default:
		k = "latency"
	}
	if f.AfterHandler {
		k += "-after-handler"
	}
	return k
}
