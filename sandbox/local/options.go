package local

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	exec          Executor
	token         string
	anyToken      bool
	clock         func() time.Time
	team          string
	project       string
	dir           string
	logger        *slog.Logger
	hostPaths     bool
	stopDelay     time.Duration
	maxTimeout    time.Duration
	outputLimit   int64
	diskQuota     int64
	diskQuotaSet  bool
	watchDisk     bool // watch the disk quota even where it could be held (tests)
	outputBudget  int64
	requestLimit  int
	seed          *uint64
	middleware    []Middleware
	mounts        []mount
	friendly      bool
	streamCut     time.Duration
	logsRace      time.Duration
	freshRefusals int
	earlyStops    bool
	createLimit   int
	createWindow  time.Duration
	refuseChunked bool
	errs          []error // malformed options, reported by New
}

// invalid records a malformed option for New to report.
func (c *config) invalid(option, format string, args ...any) {
	c.errs = append(c.errs, apierr.Invalid(option, format, args...))
}

// A Middleware wraps the route table of a server: it sees each API request
// after authentication and the request log, before routing, with the /api
// prefix removed from its path. WithMiddleware installs one; package fault
// uses it to inject faults.
type Middleware func(s *Server, next http.Handler) http.Handler

// WithMiddleware adds mw around the route table. The first one added is
// the outermost.
func WithMiddleware(mw Middleware) Option {
	return func(c *config) {
		if mw == nil {
			c.invalid("WithMiddleware", "nil middleware")
			return
		}
		c.middleware = append(c.middleware, mw)
	}
}

type mount struct {
	prefix string
	h      func(*Server) http.Handler
}

// WithMount serves the handler h returns for every path under prefix,
// beside the API: its requests need the server's bearer token (a server
// made WithAnyToken refuses them all, since it would take any token) but are not
// recorded in the request log and do not pass through any Middleware.
// Package fault mounts its control endpoint this way.
func WithMount(prefix string, h func(s *Server) http.Handler) Option {
	return func(c *config) {
		switch {
		case h == nil:
			c.invalid("WithMount", "nil handler")
		case !strings.HasPrefix(prefix, "/") || len(prefix) < 2:
			c.invalid("WithMount", "prefix %q is not an absolute path below /", prefix)
		default:
			c.mounts = append(c.mounts, mount{prefix: strings.TrimSuffix(prefix, "/"), h: h})
		}
	}
}

// WithExecutor sets what runs the commands clients start. Without it no
// command can start: each ends with exit code 127. When e has a Close
// method (io.Closer), Close calls it once every command has ended.
func WithExecutor(e Executor) Option { return func(c *config) { c.exec = e } }

// WithToken makes the server accept exactly this bearer token. By default
// New draws a random token (see Server.Token), so that only those the
// program gives it to can call the server; WithAnyToken accepts any.
// An empty token leaves the default.
func WithToken(token string) Option { return func(c *config) { c.token = token } }

// WithAnyToken makes the server accept any non-empty bearer token, as
// sandboxtest.NewServer and the sandboxtest-server command do by default:
// right for tests, where any client should get in, and wrong for a
// program that serves other users. WithToken wins over it. A server that
// accepts any token refuses every request to a mounted endpoint (see
// WithMount).
func WithAnyToken() Option { return func(c *config) { c.anyToken = true } }

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
func WithDir(root string) Option {
	return func(c *config) {
		if strings.IndexByte(root, 0) >= 0 {
			c.invalid("WithDir", "contains a NUL byte")
		}
		c.dir = root
	}
}

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
func WithStopDelay(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithStopDelay", "negative duration %s", d)
		}
		c.stopDelay = d
	}
}

// WithMaxTimeout sets the longest session timeout; extending past it
// answers 400 sandbox_timeout_invalid. The default is 24 hours, as on
// hosted Vercel (5 hours with WithFriendly, as the API reference says).
func WithMaxTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithMaxTimeout", "negative duration %s", d)
		}
		c.maxTimeout = d
	}
}

// WithOutputLimit bounds the output kept per command for replay through the
// logs endpoint (default 64 MiB): the bytes written plus 64 bytes per write.
// Beyond it the oldest output of the command is evicted; CommandInfo
// reports how much, and a replay that needs it ends with an error frame
// (code "output_evicted").
func WithOutputLimit(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid("WithOutputLimit", "%d is not a positive number of bytes", n)
		}
		c.outputLimit = n
	}
}

// WithOutputBudget bounds the output kept for replay by every command of the
// server together, counted as WithOutputLimit counts it (default 256 MiB).
// Beyond it the output of the oldest commands is evicted first. Output is
// also released when its session stops. Memory reports the total.
func WithOutputBudget(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid("WithOutputBudget", "%d is not a positive number of bytes", n)
		}
		c.outputBudget = n
	}
}

// WithRequestHistory sets how many requests Requests keeps: the n most
// recent (default 10,000, about 1.2 KiB each). Older ones are dropped, so
// that a server answering for hours stays in bounded memory; Memory
// counts them.
func WithRequestHistory(n int) Option {
	return func(c *config) {
		if n <= 0 {
			c.invalid("WithRequestHistory", "%d is not a positive number of requests", n)
		}
		c.requestLimit = n
	}
}

// defaultRequestHistory is how many requests Requests keeps unless
// WithRequestHistory says otherwise.
const defaultRequestHistory = 10_000

// WithSeed makes generated ids and names reproducible.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = &seed } }
