package fault

import (
	"math/rand/v2"
	"net/http"
	"sync"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// Handle is an injected fault.
type Handle struct {
	in  *Injector
	id  int64
	f   Fault
	txt string

	// hits is guarded by in.mu.
	hits int
}

// Hits is how many times the fault has fired so far.
func (h *Handle) Hits() int {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	return h.hits
}

// Fault returns the fault as injected.
func (h *Handle) Fault() Fault { return h.f }

// ID is the fault's number, unique within its injector.
func (h *Handle) ID() int64 { return h.id }

// Remove stops the fault from firing. Requests it is already shaping are
// not affected. Removing it again does nothing.
func (h *Handle) Remove() {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	for i, x := range h.in.list {
		if x == h {
			h.in.list = append(h.in.list[:i:i], h.in.list[i+1:]...)
			return
		}
	}
}

// Injector holds the faults of one local server. Install it with the
// options of Options; then Inject adds faults while the server runs.
type Injector struct {
	mu     sync.Mutex
	list   []*Handle
	nextID int64
	rng    *rand.Rand // from the server, when installed

	// expired maps each token expired by an ExpireToken fault to the
	// fault's text form; expiredOrder lists them, the oldest first.
	expired      map[string]string
	expiredOrder []string
}

// NewInjector returns an injector with no faults.
func NewInjector() *Injector { return &Injector{} }

// randStream is the stream of the server's randomness that faults draw
// from, so that faults do not shift the generated ids.
const randStream = 0x6661756c74 // "fault"

// Options returns what installs the injector in a server made by
// local.New: a middleware that shapes the answers of matching requests,
// and the control endpoint under ControlPrefix.
func (in *Injector) Options() []local.Option {
	return []local.Option{
		local.WithMiddleware(in.middleware),
		local.WithMount(ControlPrefix, in.control),
	}
}

// Inject adds a fault; it applies to requests that arrive from now on.
// It panics when f is invalid (see Fault.Validate), as faults written in
// a test are fixed; use Add for faults from input.
// Inject is safe to call while requests are in flight.
func (in *Injector) Inject(f Fault) *Handle {
	h, err := in.Add(f)
	if err != nil {
		panic(err)
	}
	return h
}

// Add adds a fault like Inject, and returns an error matching ErrInvalid
// when f is invalid.
func (in *Injector) Add(f Fault) (*Handle, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextID++
	h := &Handle{in: in, id: in.nextID, f: f, txt: f.String()}
	in.list = append(in.list, h)
	return h, nil
}

// ClearFaults removes every injected fault.
func (in *Injector) ClearFaults() {
	in.mu.Lock()
	in.list = nil
	in.mu.Unlock()
}

// Faults returns the faults that are injected now, in injection order.
func (in *Injector) Faults() []*Handle {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]*Handle(nil), in.list...)
}

// match returns the fault that fires for r, if any, and counts its hit.
func (in *Injector) match(r *http.Request) *Handle {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, h := range in.list {
		f := &h.f
		if !f.Matches(r.Method, r.URL.Path) || (f.Times > 0 && h.hits >= f.Times) {
			continue
		}
		if f.Probability > 0 && f.Probability < 1 && in.rng.Float64() >= f.Probability {
			continue
		}
		h.hits++
		return h
	}
	return nil
}

// middleware is the local.Middleware that injects the faults.
func (in *Injector) middleware(srv *local.Server, next http.Handler) http.Handler {
	in.mu.Lock()
	in.rng = srv.Rand(randStream)
	in.mu.Unlock()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if text, ok := in.expiredBy(bearer(r)); ok {
			local.NoteFault(r, text)
			refuseToken(w)
			return
		}
		if h := in.match(r); h != nil {
			serveFault(srv, next, w, r, h)
			return
		}
		next.ServeHTTP(w, r)
	})
}
