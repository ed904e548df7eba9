package sandboxtest

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultToken is the bearer token Token reports when no WithToken option
// was given. It is deliberately not a JWT, so the official SDK never tries
// to refresh it as an OIDC token.
const DefaultToken = "sandboxtest-token"

// closeGrace is how long Close lets in-flight requests finish on their own
// before it cuts their connections.
const closeGrace = 2 * time.Second

// Option configures a Server.
type Option func(*config)

type config struct {
	exec        Executor
	token       string
	clock       func() time.Time
	team        string
	project     string
	dir         string
	logger      *slog.Logger
	hostPaths   bool
	stopDelay   time.Duration
	maxTimeout  time.Duration
	outputLimit int64
	seed        *uint64
	leakCheck   bool
	control     bool // serve the fault-control endpoint (faults.go)
}

// WithExecutor sets what runs the commands clients start. Without it every
// command fails to start and ends with exit code 127.
func WithExecutor(e Executor) Option { return func(c *config) { c.exec = e } }

// WithToken makes the server accept exactly this bearer token. By default
// any non-empty bearer token is accepted.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithClock sets the clock behind every timestamp and session expiry. With
// an injected clock, sessions expire only when a request (or an inspection
// method) observes that their deadline has passed; with the real clock a
// timer also stops them on time.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithTeam makes the server require teamId (or slug) to equal team.
func WithTeam(team string) Option { return func(c *config) { c.team = team } }

// WithProject makes the server require the project parameter (projectId in
// the create body, projectId or project in the query) to equal project.
func WithProject(project string) Option { return func(c *config) { c.project = project } }

// WithDir sets the host directory under which each sandbox and snapshot gets
// its own directory. By default a temporary directory is created and
// removed by Close; a directory given here is left in place.
func WithDir(root string) Option { return func(c *config) { c.dir = root } }

// WithLogger sets where the server logs requests and problems. By default
// it logs nothing.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithHostPaths selects host-path mode: a session's working directory is
// the sandbox's host directory (an absolute host path) and sandbox paths are
// host paths confined to it. This suits executors that run real host
// processes. By default paths are virtual: the working directory is
// /vercel/sandbox and a sandbox path P lives at HostPath(name, P).
func WithHostPaths(on bool) Option { return func(c *config) { c.hostPaths = on } }

// WithStopDelay makes every stop and snapshot take at least d, during which
// the session reports status stopping (or snapshotting) and session calls
// answer 422. Zero (the default) stops at once.
func WithStopDelay(d time.Duration) Option { return func(c *config) { c.stopDelay = d } }

// WithMaxTimeout sets the longest session timeout; extending past it
// answers 400 sandbox_timeout_invalid. The default is 5 hours.
func WithMaxTimeout(d time.Duration) Option { return func(c *config) { c.maxTimeout = d } }

// WithOutputLimit bounds how many bytes of output are kept per command for
// replay through the logs endpoint (default 64 MiB). Beyond it the oldest
// output is dropped; CommandInfo reports how much.
func WithOutputLimit(n int64) Option { return func(c *config) { c.outputLimit = n } }

// WithSeed makes generated ids and names reproducible.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = &seed } }

// Server is a fake of the Vercel Sandbox REST API. Create it with
// NewServer in tests or New elsewhere.
type Server struct {
	cfg       config
	exec      Executor
	log       *slog.Logger
	ids       *idSource
	realClock bool
	root      string
	ownRoot   bool

	baseCtx    context.Context // cancelled by Close
	cancelBase context.CancelFunc
	createMu   sync.Mutex // serialises sandbox creation (create, fork)
	wg         liveGroup  // background work; see LiveGoroutines
	inflight   tracker
	reqs       requestLog
	faults     faultSet
	closeOnce  sync.Once

	mu        sync.Mutex
	closed    bool
	seq       int64
	url       string
	ts        *httptest.Server
	hs        *http.Server
	sandboxes map[string]*sandboxRec // live sandboxes by name
	sessions  map[string]*sessionRec
	sessList  []*sessionRec
	commands  []*commandRec
	snapshots map[string]*snapshotRec
	snapList  []*snapshotRec
}

// New returns a server that is not listening yet: call Serve, or mount
// Handler in a server of your own. Call Close when done.
func New(opts ...Option) (*Server, error) {
	cfg := config{maxTimeout: 5 * time.Hour, outputLimit: defaultOutputLimit}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		cfg:       cfg,
		exec:      cfg.exec,
		log:       cfg.logger,
		ids:       newIDSource(cfg.seed),
		realClock: cfg.clock == nil,
		sandboxes: map[string]*sandboxRec{},
		sessions:  map[string]*sessionRec{},
		snapshots: map[string]*snapshotRec{},
	}
	if s.exec == nil {
		s.exec = NewScript()
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.dir == "" {
		dir, err := os.MkdirTemp("", "sandboxtest-")
		if err != nil {
			return nil, fmt.Errorf("sandboxtest: %w", err)
		}
		s.root, s.ownRoot = dir, true
	} else {
		dir, err := filepath.Abs(cfg.dir)
		if err != nil {
			return nil, fmt.Errorf("sandboxtest: %w", err)
		}
		s.root = dir
	}
	// Resolve symlinks in the root (a temporary directory may sit behind
	// one) so that host paths handed to executors are canonical.
	if real, err := filepath.EvalSymlinks(s.root); err == nil {
		s.root = real
	}
	for _, sub := range []string{"sandboxes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(s.root, sub), 0o755); err != nil {
			if s.ownRoot {
				_ = os.RemoveAll(s.root)
			}
			return nil, fmt.Errorf("sandboxtest: %w", err)
		}
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	return s, nil
}

// NewServer starts a fake on 127.0.0.1 and closes it when the test ends,
// killing every process and ending every goroutine it started.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := New(opts...)
	if err != nil {
		t.Fatalf("sandboxtest.NewServer: %v", err)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Start()
	s.mu.Lock()
	s.ts, s.url = ts, ts.URL
	s.mu.Unlock()
	t.Cleanup(s.Close)
	if s.cfg.leakCheck {
		// Cleanups run last-registered first: this runs before Close.
		t.Cleanup(func() { s.AssertNoLeakedSandboxes(t) })
	}
	return s
}

// Serve answers requests on ln until Close. It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	if s.ts != nil || s.hs != nil {
		s.mu.Unlock()
		return errors.New("sandboxtest: server is already serving")
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.hs, s.url = hs, "http://"+ln.Addr().String()
	s.mu.Unlock()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// URL is the base URL to give clients (without /api). It is empty until
// the server listens.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Token is a bearer token the server accepts.
func (s *Server) Token() string {
	if s.cfg.token != "" {
		return s.cfg.token
	}
	return DefaultToken
}

// Handler is the fake as an http.Handler. It serves every path with and
// without the /api prefix.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// Close stops every session, kills every process, ends every goroutine the
// server started and, when the server created its directory, removes it.
// It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(s.close)
}

func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	var running []*sessionRec
	for _, sess := range s.sessList {
		if sess.timer != nil {
			sess.timer.Stop()
		}
		if sess.status != statusStopped {
			running = append(running, sess)
		}
	}
	cmds := slices.Clone(s.commands)
	ts, hs := s.ts, s.hs
	s.mu.Unlock()

	// Kill every process and wait until each command has finished, so that
	// waits and streams in flight can still deliver their final answers.
	for _, sess := range running {
		s.killSession(sess)
	}
	for _, c := range cmds {
		<-c.done
	}
	// Then let the requests in flight finish writing their answers, and cut
	// the connections of those that do not finish in time (a client that
	// stalls an upload, say).
	s.cancelBase()
	grace, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	idle := true
	select {
	case <-s.inflight.idle():
	case <-grace.Done():
		idle = false
	}
	if hs != nil {
		if err := hs.Shutdown(grace); err != nil {
			_ = hs.Close()
		}
	}
	if ts != nil {
		if !idle {
			ts.CloseClientConnections()
		}
		ts.Close() // waits for the handlers
	}
	<-s.inflight.idle()

	now := s.nowMs()
	s.mu.Lock()
	for _, sess := range running {
		if sess.status != statusStopped {
			s.markStopped(sess, now)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	if s.ownRoot {
		if err := os.RemoveAll(s.root); err != nil {
			s.log.Warn("sandboxtest: cannot remove directory", "err", err)
		}
	}
}

// now is the server's clock.
func (s *Server) now() time.Time {
	if s.cfg.clock != nil {
		return s.cfg.clock()
	}
	return time.Now()
}

func (s *Server) nowMs() int64 { return s.now().UnixMilli() }

// nextSeq returns a creation sequence number. Called with s.mu held.
func (s *Server) nextSeq() int64 {
	s.seq++
	return s.seq
}

// serveHTTP is the entry point of every request.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.inflight.enter()
	defer s.inflight.leave()
	if s.cfg.control && isControlPath(r.URL.Path) {
		s.serveControl(w, r)
		return
	}
	entry := s.reqs.record(r, s.now())
	rw := &statusWriter{ResponseWriter: w, entry: entry}
	rw.Header().Set("X-Vercel-Id", s.ids.requestID(defaultRegion, s.nowMs()))
	s.log.Debug("sandboxtest: request", "method", r.Method, "path", r.URL.Path)

	if aerr := s.authorize(r); aerr != nil {
		writeError(rw, aerr)
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		writeError(rw, errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down"))
		return
	}
	s.expireDue()
	p := r.URL.Path
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		p = p[len("/api"):]
	}
	if f := s.faults.match(s, r, p); f != nil {
		s.serveFault(rw, r, p, f)
		return
	}
	if aerr := s.route(rw, r, p); aerr != nil {
		writeError(rw, aerr)
	}
}

// authorize checks the bearer token and the team.
func (s *Server) authorize(r *http.Request) *apiError {
	h := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			message: "The request is missing an authentication token", extra: map[string]any{"missingToken": true}}
	}
	if s.cfg.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.token)) != 1 {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			message: "Not authorized", extra: map[string]any{"invalidToken": true}}
	}
	if s.cfg.team != "" {
		q := r.URL.Query()
		if q.Get("teamId") != s.cfg.team && q.Get("slug") != s.cfg.team {
			return errorf(http.StatusForbidden, codeForbidden, "Not authorized to access this team")
		}
	}
	return nil
}

// checkProject validates a project parameter against WithProject.
func (s *Server) checkProject(project string) *apiError {
	if s.cfg.project == "" {
		return nil
	}
	if project == "" {
		return badRequest("projectId is required")
	}
	if project != s.cfg.project {
		return notFound("Project not found")
	}
	return nil
}

// statusWriter records the status of a response in the request log and
// passes flushes through.
type statusWriter struct {
	http.ResponseWriter
	entry *reqEntry
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.entry.setStatus(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Flush sends buffered data to the client.
func (w *statusWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// tracker counts requests in flight.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (t *tracker) enter() {
	t.mu.Lock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) leave() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
	t.mu.Unlock()
}

// idle returns a channel that is closed when no request is in flight.
func (t *tracker) idle() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return closedChan
	}
	return t.zero
}

// Script returns the scripted executor the server uses when it was given
// no WithExecutor (or was given a *Script), so a test can register
// handlers: srv.Script().Handle(sandboxtest.MatchName("ls"), ...). It
// returns nil when the server uses another executor.
func (s *Server) Script() *Script {
	sc, _ := s.exec.(*Script)
	return sc
}
