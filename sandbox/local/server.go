package local

import (
	"context"
	cryptorand "crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// DefaultToken is the bearer token Token reports for a server made
// WithAnyToken, which accepts any. It is deliberately not a JWT, so the
// official SDK never tries to refresh it as an OIDC token.
const DefaultToken = "sandboxtest-token"

// closeGrace is how long Close lets in-flight requests finish on their own
// before it cuts their connections.
const closeGrace = 2 * time.Second

// Server serves the Vercel Sandbox REST API on this machine. Create it
// with New (tests use sandboxtest.NewServer).
type Server struct {
	cfg       config
	out       *outputStore // command output kept for replay
	exec      Executor
	log       *slog.Logger
	ids       *idSource
	realClock bool
	root      string
	ownRoot   bool

	baseCtx    context.Context // cancelled by Close
	cancelBase context.CancelFunc
	createMu   sync.Mutex     // serialises sandbox creation (create, fork)
	wg         liveGroup      // background work; see LiveGoroutines
	diskWG     sync.WaitGroup // disk quota watchers, while commands run
	disks      *diskImages    // holds the disk quota; nil when it is watched
	disksWhy   string         // why disks is nil
	inflight   tracker
	reqs       requestLog
	closeOnce  sync.Once
	serving    sync.WaitGroup // the goroutine of Start
	mux        *http.ServeMux // the route table
	routed     http.Handler   // mux behind the middleware
	mounts     []mountedHandler
	tty        ttyTickets // tickets of interactive sessions
	limiter    rateLimiter
	tokens     tokenUses // uses of each token, for WithFreshTokenRefusals

	mu        sync.Mutex
	closed    bool
	seq       int64
	url       string
	hs        *http.Server
	sandboxes map[string]*sandboxRec // live sandboxes by name
	sessions  map[string]*sessionRec
	sessList  []*sessionRec
	commands  []*commandRec
	snapshots map[string]*snapshotRec
	snapList  []*snapshotRec
	drives    map[string]*driveRec // by name; made on first use
}

// New returns a server that is not listening yet: call Serve, or mount
// Handler in a server of your own. Call Close when done.
func New(opts ...Option) (*Server, error) {
	cfg := config{outputLimit: defaultOutputLimit, outputBudget: defaultOutputBudget, requestLimit: defaultRequestHistory}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.errs) > 0 {
		return nil, cfg.errs[0]
	}
	if cfg.token == "" && !cfg.anyToken {
		// Not a JWT either: the official SDK never tries to refresh it.
		cfg.token = "local_" + cryptorand.Text()
	}
	if cfg.maxTimeout == 0 {
		cfg.maxTimeout = hostedMaxTimeout
		if cfg.friendly {
			cfg.maxTimeout = 5 * time.Hour
		}
	}
	s := &Server{
		cfg:       cfg,
		out:       newOutputStore(cfg.outputBudget),
		reqs:      requestLog{limit: cfg.requestLimit},
		exec:      cfg.exec,
		log:       cfg.logger,
		ids:       newIDSource(cfg.seed),
		realClock: cfg.clock == nil,
		sandboxes: map[string]*sandboxRec{},
		sessions:  map[string]*sessionRec{},
		snapshots: map[string]*snapshotRec{},
	}
	if s.exec == nil {
		s.exec = noExecutor{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.dir == "" {
		dir, err := os.MkdirTemp("", "sandboxtest-")
		if err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		s.root, s.ownRoot = dir, true
	} else {
		dir, err := filepath.Abs(cfg.dir)
		if err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		s.root = dir
	}
	// Resolve symlinks in the root (a temporary directory may sit behind
	// one) so that host paths handed to executors are canonical.
	if real, err := filepath.EvalSymlinks(s.root); err == nil {
		s.root = real
	}
	// The sandboxes' files are private whatever the mode of the root: no
	// other host user may reach (and run) what a command left there.
	for _, sub := range []string{"sandboxes", "snapshots"} {
		d := filepath.Join(s.root, sub)
		err := os.MkdirAll(d, 0o700)
		if err == nil {
			err = os.Chmod(d, 0o700)
		}
		if err != nil {
			if s.ownRoot {
				_ = os.RemoveAll(s.root)
			}
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	s.openDisks()
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	s.mux = s.routes()
	s.routed = http.HandlerFunc(s.serveRoute)
	for i := len(cfg.middleware) - 1; i >= 0; i-- {
		s.routed = cfg.middleware[i](s, s.routed)
	}
	for _, m := range cfg.mounts {
		s.mounts = append(s.mounts, mountedHandler{prefix: m.prefix, h: m.h(s)})
	}
	return s, nil
}

type mountedHandler struct {
	prefix string
	h      http.Handler
}

// Serve answers requests on ln until Close. It returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	hs, err := s.listen(ln)
	if err != nil {
		return err
	}
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Start answers requests on ln in the background until Close. URL is set
// when it returns.
func (s *Server) Start(ln net.Listener) error {
	hs, err := s.listen(ln)
	if err != nil {
		return err
	}
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("local: serve", "err", err)
		}
	}()
	return nil
}

func (s *Server) listen(ln net.Listener) (*http.Server, error) {
	if ln == nil {
		return nil, apierr.Invalid("ln", "nil listener")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, http.ErrServerClosed
	}
	if s.hs != nil {
		return nil, errors.New("local: server is already serving")
	}
	s.hs = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	s.url = "http://" + ln.Addr().String()
	return s.hs, nil
}

// URL is the base URL to give clients (without /api). It is empty until
// the server listens.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Token is a bearer token the server accepts: the one of WithToken, else
// the random one New drew, or DefaultToken for a server made WithAnyToken.
func (s *Server) Token() string {
	if s.cfg.token != "" {
		return s.cfg.token
	}
	return DefaultToken
}

// Handler is the server as an http.Handler. It serves every path with and
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
	hs := s.hs
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
	select {
	case <-s.inflight.idle():
	case <-grace.Done():
	}
	if hs != nil {
		if err := hs.Shutdown(grace); err != nil {
			_ = hs.Close() // cuts the connections of requests still in flight
		}
	}
	<-s.inflight.idle()
	s.serving.Wait()

	now := s.nowMs()
	s.mu.Lock()
	for _, sess := range running {
		if sess.status != statusStopped {
			s.markStopped(sess, now)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.diskWG.Wait()
	if c, ok := s.exec.(io.Closer); ok {
		_ = c.Close() // every command has ended
	}
	s.closeDisks()
	if s.ownRoot {
		if err := os.RemoveAll(s.root); err != nil {
			s.log.Warn("local: cannot remove directory", "err", err)
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
	if s.serveHealth(w, r) { // the terminal host's probe
		return
	}
	if s.servePTY(w, r) { // a terminal's WebSocket, opened by its ticket
		return
	}
	for _, m := range s.mounts {
		if r.URL.Path == m.prefix || strings.HasPrefix(r.URL.Path, m.prefix+"/") {
			if aerr := s.authorizeMount(r); aerr != nil {
				writeError(w, aerr)
				return
			}
			m.h.ServeHTTP(w, r)
			return
		}
	}
	entry := s.reqs.record(r, s.now())
	rw := &statusWriter{ResponseWriter: w, entry: entry}
	rw.Header().Set("X-Vercel-Id", s.ids.requestID(defaultRegion, s.nowMs()))
	if !s.realClock {
		// Every time the server reports, its Date too, is on its clock.
		rw.Header().Set("Date", s.now().UTC().Format(http.TimeFormat))
	}
	creates := r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, "/sandboxes") || strings.HasSuffix(r.URL.Path, "/fork"))
	if !s.rateHeaders(rw.Header(), creates) {
		writeError(rw, errorf(http.StatusTooManyRequests, codeRateLimited, "Too many sandboxes created; try again later."))
		return
	}
	s.log.Debug("local: request", "method", r.Method, "path", r.URL.Path)

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
	r = r.WithContext(context.WithValue(r.Context(), entryKey{}, entry))
	if p := r.URL.Path; p == "/api" || strings.HasPrefix(p, "/api/") {
		u := *r.URL
		u.Path, u.RawPath = p[len("/api"):], ""
		r.URL = &u
	}
	s.routed.ServeHTTP(rw, r)
}

// entryKey is the context key of a request's entry in the request log.
type entryKey struct{}

// NoteFault records in the request log that an injected fault, described
// by text, shaped the answer to r (see Request.Fault). Middleware calls it.
func NoteFault(r *http.Request, text string) {
	if e, ok := r.Context().Value(entryKey{}).(*reqEntry); ok {
		e.fault.Store(&text)
	}
}

// Done is closed when Close begins, so that work a Middleware holds up
// (a delay, a stalled body) can end at once.
func (s *Server) Done() <-chan struct{} { return s.baseCtx.Done() }

// Rand returns a source of randomness of its own for each stream number;
// with WithSeed it is reproducible, and drawing from it does not shift the
// generated ids.
func (s *Server) Rand(stream uint64) *rand.Rand {
	if s.cfg.seed != nil {
		return rand.New(rand.NewPCG(*s.cfg.seed, stream))
	}
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

// authorize checks the bearer token and the team.
func (s *Server) authorize(r *http.Request) *apiError {
	if aerr := s.authorizeToken(r); aerr != nil {
		return aerr
	}
	if s.cfg.team != "" {
		q := r.URL.Query()
		if q.Get("teamId") != s.cfg.team && q.Get("slug") != s.cfg.team {
			return errorf(http.StatusForbidden, codeForbidden, "Not authorized to access this team")
		}
	}
	return nil
}

// authorizeMount checks a request to a mounted endpoint: it needs the
// server's token, so a server that takes any token (WithAnyToken) refuses
// them all.
func (s *Server) authorizeMount(r *http.Request) *apiError {
	if s.cfg.token == "" {
		return &apiError{status: http.StatusForbidden, code: codeForbidden,
			message: "This endpoint needs a server token (WithToken, or --token), not WithAnyToken: without one anyone could call it"}
	}
	return s.authorizeToken(r)
}

// authorizeToken checks the bearer token.
func (s *Server) authorizeToken(r *http.Request) *apiError {
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
	if jwtExpired(tok, s.now()) {
		return s.expiredToken()
	}
	if s.freshTokenRefused(tok) {
		return errorf(http.StatusUnauthorized, "unauthorized", "Not authorized")
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

// Executor returns what runs the server's commands (see WithExecutor).
func (s *Server) Executor() Executor { return s.exec }
