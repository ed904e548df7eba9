package soak_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// The soak: 12 workers at once, each running rounds (create a sandbox,
// run 6 to 14 operations, count how often each command ran, delete it)
// until the duration is over. Before each operation a worker draws 0 to 3
// faults from its own random stream, narrowed to its own session, and
// removes them after; the server's own faults (the edge cutting streams
// after a few seconds, the race of logs with a command's end, refusals of
// fresh tokens) are drawn once. The seed repeats every choice, though not
// the interleaving of the workers. The workers share two clients, so a
// token one of them expires is renewed for all; every fourth worker uses
// the one with re-attachment disabled, where cut streams end in
// ErrStreamEnded.
//
// What the operations deliver is checked byte for byte. A call that
// succeeds must deliver everything, once; a call that fails must have
// delivered a prefix of the truth, and its error is counted by kind (an
// error is an honest report of what was lost, never a licence to deliver
// wrong bytes). A violation of either is a failure of the test.

const (
	defaultWorkers = 12
	opTimeout      = 90 * time.Second // an operation that takes longer hangs
	minOps         = 3                // per round, even past the deadline
)

// options shape one run of the soak.
type options struct {
	duration time.Duration
	workers  int
	seed     uint64
	faults   bool // inject random faults
	// faultKinds are the kinds of faults drawn from (see faultKinds).
	faultKinds []string
	ops        []opKind // the operations drawn from, with repetitions as weights
	// middleware, if set, is put in every client: the tests of the soak
	// itself use it to sabotage what the client receives.
	middleware sandbox.Middleware
	// resources measures goroutines, descriptors and heap; the run must
	// then be the only one in the process.
	resources bool
}

// allOps is the default mix: attached and detached runs, file round trips.
var allOps = []opKind{opAttached, opAttached, opDetached, opDetached, opFiles}

func TestSoak(t *testing.T) {
	v := os.Getenv("SANDBOX_SOAK")
	if v == "" {
		t.Skip("the soak runs when SANDBOX_SOAK gives its duration, e.g. SANDBOX_SOAK=2m")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("SANDBOX_SOAK=%q: want a positive duration such as 2m", v)
	}
	seed := rand.Uint64()
	if s := os.Getenv("SANDBOX_SOAK_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("SANDBOX_SOAK_SEED=%q: %v", s, err)
		}
	}
	kinds := faultKinds
	if s := os.Getenv("SANDBOX_SOAK_FAULTS"); s != "" {
		kinds = strings.Split(s, ",")
		for _, k := range kinds {
			if !slices.Contains(faultKinds, k) {
				t.Fatalf("SANDBOX_SOAK_FAULTS: unknown kind %q; the kinds are %s", k, strings.Join(faultKinds, ","))
			}
		}
	}
	t.Logf("seed %d: SANDBOX_SOAK_SEED=%d repeats its choices", seed, seed)
	rep := runSoak(t, options{duration: d, workers: defaultWorkers, seed: seed, faults: true, faultKinds: kinds,
		ops: allOps, resources: true})
	t.Log(rep.summary())
	t.Log(rep.details())
	t.Log("an example of each kind of error:\n" + rep.tl.exampleList())
	rep.check(t)
}

// report is the outcome of a run.
type report struct {
	o       options
	cfg     serverConfig
	tl      *tally
	elapsed time.Duration

	heapWarm, heapEnd          uint64
	goroutinesBase, goroutines int
	fdsBase, fds               int
	server                     serverState
	serverErr                  error
}

// runSoak runs the soak and returns what it counted.
func runSoak(t *testing.T, o options) *report {
	t.Helper()
	start := time.Now()
	rep := &report{o: o, tl: newTally()}
	if o.resources {
		warmNetpoll(t)
		rep.goroutinesBase, rep.fdsBase = runtime.NumGoroutine(), openFDs()
	}
	rng := rand.New(rand.NewPCG(o.seed, 0))
	rep.cfg = serverConfig{Seed: o.seed, StreamCut: -1}
	if o.faults {
		rep.cfg.StreamCut = 1500*time.Millisecond + time.Duration(rng.IntN(2500))*time.Millisecond
		rep.cfg.LogsRace = []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond}[rng.IntN(3)]
		rep.cfg.FreshRefusals = rng.IntN(2)
	}
	srv := startServer(t, rep.cfg)

	ctx, cancel := context.WithTimeout(t.Context(), o.duration+10*time.Minute)
	defer cancel()
	var hooks hookCounts
	withReattach, trA := newClient(t, srv, o, &hooks, false)
	noReattach, trB := newClient(t, srv, o, &hooks, true)
	idle := func() { trA.CloseIdleConnections(); trB.CloseIdleConnections() }

	deadline := start.Add(o.duration)
	b := newBarrier(o.workers, start.Add(max(o.duration/5, time.Second)))
	var wg sync.WaitGroup
	for i := range o.workers {
		w := &worker{id: i, rng: rand.New(rand.NewPCG(o.seed, uint64(i+1))), c: withReattach, reattach: true,
			replayer: withReattach, srv: srv, tl: rep.tl, o: &o, deadline: deadline}
		if i%4 == 3 {
			w.c, w.reattach = noReattach, false
		}
		wg.Go(func() {
			defer b.leave(i)
			w.run(ctx, b)
		})
	}
	b.arrived.Wait()
	if o.resources {
		idle()
		rep.heapWarm = heapAfterGC()
	}
	close(b.release)
	wg.Wait()
	if o.resources {
		idle()
		rep.heapEnd = heapAfterGC()
	}
	rep.server, rep.serverErr = srv.state(ctx)
	if err := srv.stop(); err != nil {
		rep.tl.violate("server", "the soak server ended with %v; its stderr:\n%s", err, srv.stderr)
	}
	hooks.into(rep.tl)
	idle()
	if o.resources {
		rep.goroutines = settle(rep.goroutinesBase, runtime.NumGoroutine)
		rep.fds = settle(rep.fdsBase, openFDs)
	}
	rep.elapsed = time.Since(start)
	return rep
}

// check fails t for every violation the run saw, and for what the client
// kept.
func (r *report) check(t *testing.T) {
	t.Helper()
	where := fmt.Sprintf("(seed %d: SANDBOX_SOAK_SEED=%d repeats the choices)", r.o.seed, r.o.seed)
	if n := r.tl.violationCount(); n > 0 {
		t.Errorf("%d violations %s; the first ones:\n%s", n, where, strings.Join(r.tl.firstViolations(), "\n"))
	}
	if r.serverErr != nil {
		t.Errorf("reading the server's state: %v", r.serverErr)
	} else if r.server.Leaked > 0 {
		t.Errorf("%d sandboxes left running %s", r.server.Leaked, where)
	}
	if !r.o.resources {
		return
	}
	if r.goroutines > r.goroutinesBase {
		t.Errorf("goroutines: %d at the start, %d at the end %s", r.goroutinesBase, r.goroutines, where)
	}
	if r.fdsBase >= 0 && r.fds > r.fdsBase {
		t.Errorf("file descriptors: %d at the start, %d at the end %s", r.fdsBase, r.fds, where)
	}
	// The client's heap, idle, after the warm-up and at the end: a
	// tolerant bound (collection is not exact, and the idle heap is about
	// half a MiB), which a leak of 1.5 KiB per operation over two minutes
	// (some 3,000 operations) still crosses.
	if limit := r.heapWarm + max(r.heapWarm, 4<<20); r.heapEnd > limit {
		t.Errorf("client heap grew: %s after the warm-up, %s at the end (limit %s) %s",
			mib(r.heapWarm), mib(r.heapEnd), mib(limit), where)
	}
}

// summary is the line docs/reliability.md quotes.
func (r *report) summary() string {
	c := r.tl.get
	return fmt.Sprintf("soak %s (%s in all), seed %d, %d sandboxes at once (%d rounds): "+
		"%d operations (%d attached, %d detached, %d file round trips), %d commands, %s of output checked, %d files (%s) checked; "+
		"bytes lost %d, duplicated %d, wrong %d, commands run twice %d, checksums wrong %d; "+
		"allowed errors %d (%s), %s reported lost by them; "+
		"faults fired %d of %d injected; heap after warm-up %s, at end %s; goroutines %d→%d, fds %d→%d; violations %d",
		r.o.duration, r.elapsed.Round(time.Second), r.o.seed, r.o.workers, c("rounds"),
		c("ops.attached")+c("ops.detached")+c("ops.files"), c("ops.attached"), c("ops.detached"), c("ops.files"),
		c("commands"), mib(uint64(c("bytes.delivered"))), c("files.checked"), mib(uint64(c("files.bytes"))),
		c("bytes.lost"), c("bytes.duplicated"), c("bytes.wrong"), c("commands.run_twice"), c("checksums.wrong"),
		r.tl.sum("errors."), r.tl.breakdown("errors."), mib(uint64(c("bytes.reported_lost"))),
		r.tl.sum("faults.fired."), r.tl.sum("faults.injected."),
		mib(r.heapWarm), mib(r.heapEnd), r.goroutinesBase, r.goroutines, r.fdsBase, r.fds, r.tl.violationCount())
}

// details lists the faults and the client's recoveries.
func (r *report) details() string {
	c := r.tl.get
	return fmt.Sprintf("server: %s; faults fired by kind: %s; re-attachments %d, retries %d, resumes %d, tokens minted %d; "+
		"replays after an error: %d whole, %d failed (%s); commands never started %d; partial files after a failed upload %d",
		r.cfg, r.tl.breakdown("faults.fired."), c("client.reattach"), c("client.retry"), c("client.resume"), c("client.tokens"),
		c("replay.ok"), r.tl.sum("replay.error."), r.tl.breakdown("replay.error."), c("commands.never_started"),
		c("files.partial_after_error"))
}

// hookCounts counts what the clients report through their hooks.
type hookCounts struct {
	reattach, retry, resume, tokens atomic.Int64
}

func (h *hookCounts) into(tl *tally) {
	tl.add("client.reattach", h.reattach.Load())
	tl.add("client.retry", h.retry.Load())
	tl.add("client.resume", h.resume.Load())
	tl.add("client.tokens", h.tokens.Load())
}

// newClient returns a client of the soak server with OIDC credentials
// minted on demand (a token the server expires is renewed), fast retries,
// and its own transport, returned so that its idle connections can be
// closed.
func newClient(t *testing.T, srv *server, o options, hooks *hookCounts, noReattach bool) (*sandbox.Client, *http.Transport) {
	t.Helper()
	var minted atomic.Int64
	creds := auth.NewOIDCProvider(auth.OIDCOptions{
		Refresher: auth.RefresherFunc(func(context.Context, auth.Target) (string, error) {
			n := minted.Add(1)
			hooks.tokens.Add(1)
			return authtest.MakeJWT(map[string]any{"owner_id": local.TeamID, "project_id": local.ProjectID,
				"exp": time.Now().Add(time.Hour).Unix(), "jti": strconv.FormatInt(n, 10)}), nil
		}),
	})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	opts := []sandbox.Option{
		sandbox.WithBaseURL(srv.api),
		sandbox.WithCredentials(creds),
		sandbox.WithTransport(tr),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{MaxRetries: 3, BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond,
			OnRetry: func(sandbox.RetryEvent) { hooks.retry.Add(1) }}),
		sandbox.WithReattachPolicy(sandbox.ReattachPolicy{Disabled: noReattach,
			OnReattach: func(sandbox.ReattachEvent) { hooks.reattach.Add(1) }}),
		sandbox.WithOnResume(func(sandbox.ResumeEvent) { hooks.resume.Add(1) }),
	}
	if o.middleware != nil {
		opts = append(opts, sandbox.WithMiddleware(o.middleware))
	}
	c, err := sandbox.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, tr
}

// barrier holds every worker at the end of the warm-up, so that the heap
// is measured while nothing runs; a worker that ends counts as arrived.
type barrier struct {
	at      time.Time
	arrived sync.WaitGroup
	release chan struct{}
	mu      sync.Mutex
	left    []bool // per worker: arrived
}

func newBarrier(n int, at time.Time) *barrier {
	b := &barrier{at: at, release: make(chan struct{}), left: make([]bool, n)}
	b.arrived.Add(n)
	return b
}

// leave marks worker i arrived, once, and reports whether it was the
// first time.
func (b *barrier) leave(i int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left[i] {
		return false
	}
	b.left[i] = true
	b.arrived.Done()
	return true
}

// wait holds worker i once the warm-up is over, until the heap is measured.
func (b *barrier) wait(i int) {
	if time.Now().Before(b.at) {
		return
	}
	if b.leave(i) {
		<-b.release
	}
}

// tally counts by name and keeps the first violations.
type tally struct {
	mu         sync.Mutex
	n          map[string]int64
	violations []string
	nViolated  int
	examples   map[string]string // per kind of error, the first seen
}

const maxViolationsKept = 30

func newTally() *tally { return &tally{n: map[string]int64{}, examples: map[string]string{}} }

// example keeps the first example of an error of kind.
func (t *tally) example(kind, text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.examples[kind]; !ok {
		t.examples[kind] = text
	}
}

// exampleList lists the examples, by kind.
func (t *tally) exampleList() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for k, v := range t.examples {
		parts = append(parts, "  "+k+": "+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

func (t *tally) add(k string, d int64) {
	t.mu.Lock()
	t.n[k] += d
	t.mu.Unlock()
}

func (t *tally) get(k string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[k]
}

// violate records a violation of kind (counted as violation.kind).
func (t *tally) violate(kind, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n["violation."+kind]++
	t.nViolated++
	if len(t.violations) < maxViolationsKept {
		t.violations = append(t.violations, "["+kind+"] "+fmt.Sprintf(format, args...))
	}
}

func (t *tally) violationCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nViolated
}

func (t *tally) firstViolations() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.violations)
}

// sum adds the counts whose names start with prefix.
func (t *tally) sum(prefix string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s int64
	for k, v := range t.n {
		if strings.HasPrefix(k, prefix) {
			s += v
		}
	}
	return s
}

// breakdown lists the counts whose names start with prefix, by name.
func (t *tally) breakdown(prefix string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for k, v := range t.n {
		if name, ok := strings.CutPrefix(k, prefix); ok && v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", name, v))
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// heapAfterGC returns the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// openFDs counts the process's open descriptors, or -1 where /proc does
// not tell.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// warmNetpoll makes the runtime open its network poller's descriptors,
// which it keeps for the life of the process, before the baseline.
func warmNetpoll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// settle waits up to 10 s for count to drop to base and returns the last
// count.
func settle(base int, count func() int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := count()
		if n <= base || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}
