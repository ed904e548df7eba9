package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
)

// DefaultBaseURL is the API the client talks to by default.
const DefaultBaseURL = "https://vercel.com/api"

// Version is the version of this library, sent in the user agent.
const Version = httpcore.Version

// Errors returned by the API calls, for errors.As. They are the types of
// package sandboxerr, which documents their fields and methods.
type (
	// APIError is a non-2xx answer of the API.
	APIError = sandboxerr.APIError
	// OutcomeUnknownError reports a call that is not safe to repeat and
	// failed in a way that leaves open whether it took effect.
	OutcomeUnknownError = sandboxerr.OutcomeUnknownError
	// StreamError is an NDJSON stream that failed after its 200 answer.
	StreamError = sandboxerr.StreamError
	// InputError is invalid input refused before any request.
	InputError = sandboxerr.InputError
	// OutputLostError reports output that cannot be delivered whole: the
	// logs of a finished command kept answering 404, or a replay of them
	// did not match what was delivered (Stream and Offset say where).
	OutputLostError = sandboxerr.OutputLostError
	// DecodeError is a 2xx answer whose body could not be decoded.
	DecodeError = sandboxerr.DecodeError
	// ResponseTooLargeError is an answer longer than the limit set with
	// WithMaxResponseSize; it was not read further.
	ResponseTooLargeError = sandboxerr.ResponseTooLargeError
	// RepeatedCursorError is a listing whose server sent a cursor it had
	// sent before; the listing stopped instead of looping.
	RepeatedCursorError = sandboxerr.RepeatedCursorError
	// InsecureURLError is a URL that would carry credentials in clear
	// text, refused by NewClient.
	InsecureURLError = sandboxerr.InsecureURLError
)

// Sentinel errors for errors.Is.
var (
	ErrNotFound      = apierr.ErrNotFound      // 404
	ErrGone          = apierr.ErrGone          // 410: the session has stopped
	ErrStopping      = apierr.ErrStopping      // 422 sandbox_stopping or sandbox_snapshotting
	ErrRateLimited   = apierr.ErrRateLimited   // 429; APIError.RetryAfter says how long to wait
	ErrUnauthorized  = apierr.ErrUnauthorized  // 401
	ErrForbidden     = apierr.ErrForbidden     // 403
	ErrBadRequest    = apierr.ErrBadRequest    // 400
	ErrConflict      = apierr.ErrConflict      // 409
	ErrServer        = apierr.ErrServer        // 5xx
	ErrUnknownResult = apierr.ErrUnknownResult // see OutcomeUnknownError
	ErrStreamEnded   = apierr.ErrStreamEnded   // a stream ended before its final frame
	ErrInvalidInput  = apierr.ErrInvalidInput  // see InputError
	ErrDecode        = apierr.ErrDecode        // see DecodeError
	// ErrResponseTooLarge matches ResponseTooLargeError.
	ErrResponseTooLarge = apierr.ErrResponseTooLarge
	// ErrRepeatedCursor matches RepeatedCursorError.
	ErrRepeatedCursor = apierr.ErrRepeatedCursor
	// ErrInsecureURL matches InsecureURLError.
	ErrInsecureURL = apierr.ErrInsecureURL
	// ErrSnapshotNotFound matches a resume refused with snapshot_not_found:
	// the sandbox cannot be resumed (hosted Vercel keeps nothing of a
	// non-persistent one). GetOrCreate and a named Create recreate it.
	ErrSnapshotNotFound = apierr.ErrSnapshotNotFound
	// ErrExecutableNotFound matches a command refused with
	// executable_not_found: it never started, so it has no exit code.
	ErrExecutableNotFound = apierr.ErrExecutableNotFound
	// ErrOutputLost matches output that cannot be delivered whole; see
	// OutputLostError.
	ErrOutputLost = apierr.ErrOutputLost
)

// RateLimit is the rate-limit window an answer reported; see
// APIError.RateLimit.
type RateLimit = sandboxerr.RateLimit

// RetryPolicy configures retries of failed requests; see WithRetryPolicy.
type RetryPolicy struct {
	// MaxRetries is how many times a request may be re-sent after its first
	// attempt. Zero means the default (2); a negative value disables retries.
	MaxRetries int
	// BaseDelay is the first backoff; each retry doubles it, with a random
	// factor in [1, 2). Zero means 400 ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff. Zero means 10 s.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client will wait for.
	// A 429 asking for longer is returned at once as a rate-limit error.
	// Zero means 20 s. Hosted Vercel limits creates per minute-long window
	// and a 429 may ask for up to a minute: set about 70 s to wait for the
	// window instead of failing. A 429 without Retry-After is read from
	// its x-ratelimit-reset header. Waits saturate: a Retry-After too
	// large for a Duration waits until the context ends.
	MaxRetryAfter time.Duration
	// OnRetry, if set, is called before each retry.
	OnRetry func(RetryEvent)
}

// RetryEvent describes one retry about to happen.
type RetryEvent struct {
	Method     string
	Path       string
	Attempt    int           // the attempt about to be made, 2 for the first retry
	StatusCode int           // status of the failed attempt, 0 for a transport error
	Err        error         // transport error of the failed attempt, if any
	Wait       time.Duration // how long the client waits before the attempt
}

func (p RetryPolicy) core() httpcore.RetryPolicy {
	cp := httpcore.RetryPolicy{MaxRetries: p.MaxRetries, BaseDelay: p.BaseDelay, MaxDelay: p.MaxDelay, MaxRetryAfter: p.MaxRetryAfter}
	if f := p.OnRetry; f != nil {
		cp.OnRetry = func(e httpcore.RetryEvent) { f(RetryEvent(e)) }
	}
	return cp
}

// Middleware wraps every attempt of every request, after credentials are
// set. It must call next at most once and return its answer or an error.
type Middleware func(req *http.Request, next RoundTripFunc) (*http.Response, error)

// RoundTripFunc is the next step of a Middleware chain; it is also an
// http.RoundTripper.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (m Middleware) core() httpcore.Middleware {
	return func(req *http.Request, next httpcore.RoundTripFunc) (*http.Response, error) {
		return m(req, RoundTripFunc(next))
	}
}

// Client talks to the Vercel Sandbox API. It is safe for concurrent use;
// create one with NewClient and share it. The zero Client is not usable.
//
// A method's name says which key it takes: Get, Resume, Update, Stop,
// Delete, Fork and Health take a sandbox name; the methods named for a
// session (GetSession, StopSession, ExtendSessionTimeout,
// SetSessionNetworkPolicy, SnapshotSession, OpenSessionInteractive,
// SessionHealth) take a session id; those named for a snapshot a snapshot id, and those named for
// a drive a drive name.
type Client struct {
	core       *httpcore.Client
	autoResume bool
	onResume   func(ResumeEvent)
	reattach   conn.ReattachPolicy
	upload     uploadConfig
}

// ResumeEvent reports that a stopped sandbox was resumed.
type ResumeEvent struct {
	SandboxName  string
	OldSessionID string
	NewSessionID string
}

type config struct {
	provider   auth.Provider
	token      *string // set by WithToken: a Static provider, made by NewClient
	httpClient *http.Client
	transport  http.RoundTripper
	baseURL    string
	baseURLSet bool // by WithBaseURL; else EnvBaseURL applies
	team       string
	project    string
	retry      RetryPolicy
	logger     *slog.Logger
	ua         string
	middleware []Middleware
	timeout    time.Duration
	maxAnswer  int64
	autoResume bool
	onResume   func(ResumeEvent)
	reattach   ReattachPolicy
	upload     uploadConfig
	obs        observe.Observer // set by package otelsandbox
	errs       []error
}

// Option configures a Client.
type Option func(*config)

// WithCredentials sets the credentials provider. The default is
// vercelcli.Default(auth.DefaultOptions{}), which reads the environment.
func WithCredentials(p auth.Provider) Option {
	return func(c *config) {
		if p == nil {
			c.errs = append(c.errs, apierr.Invalid("WithCredentials", "nil provider"))
		}
		c.provider = p
		c.token = nil
	}
}

// WithToken uses a fixed access token, for the team and project that
// WithTeam and WithProject name. The token and both are required: NewClient
// refuses an empty one with an *InputError.
func WithToken(token string) Option {
	return func(c *config) {
		c.token = &token
		c.provider = nil
	}
}

// WithHTTPClient uses hc's Transport for every request. hc.Timeout, when
// set, bounds each non-streaming request; streams (command output, file
// downloads, waits) are bounded only by their context.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) {
		if hc == nil {
			c.errs = append(c.errs, apierr.Invalid("WithHTTPClient", "nil client"))
			return
		}
		c.httpClient = hc
	}
}

// WithTransport sets the http.RoundTripper under the client's own layers
// (credentials, middleware, retries).
func WithTransport(rt http.RoundTripper) Option {
	return func(c *config) {
		if rt == nil {
			c.errs = append(c.errs, apierr.Invalid("WithTransport", "nil transport"))
		}
		c.transport = rt
	}
}

// WithBaseURL sets the API base URL (default: the environment variable
// EnvBaseURL when set, else DefaultBaseURL).
// Plain http is accepted only to a literal loopback address (127.0.0.0/8,
// ::1) or the name localhost, which is dialled at 127.0.0.1 or ::1 and
// never looked up (so it needs an *http.Transport, or none); anything
// else, *.localhost included, gives an *InsecureURLError.
func WithBaseURL(u string) Option {
	return func(c *config) { c.baseURL, c.baseURLSet = u, true }
}

// WithTeam overrides the team the credentials name; with WithToken, it
// names the token's team.
func WithTeam(teamID string) Option { return func(c *config) { c.team = teamID } }

// WithProject overrides the project the credentials name; with WithToken,
// it names the token's project.
func WithProject(projectID string) Option { return func(c *config) { c.project = projectID } }

// WithRetryPolicy configures retries. The default makes at most 3 attempts
// with a 400 ms jittered exponential backoff, and waits for Retry-After up
// to 20 s. A negative MaxRetries disables retries; a negative duration is
// an *InputError naming the field.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) {
		for _, d := range []struct {
			name string
			d    time.Duration
		}{{"BaseDelay", p.BaseDelay}, {"MaxDelay", p.MaxDelay}, {"MaxRetryAfter", p.MaxRetryAfter}} {
			if d.d < 0 {
				c.errs = append(c.errs, apierr.Invalid("WithRetryPolicy."+d.name, "negative duration %v", d.d))
			}
		}
		c.retry = p
	}
}

// WithLogger sets the logger for retries, resumes and request summaries
// (debug level). The default discards. Tokens are never logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithUserAgent appends s to the user agent.
func WithUserAgent(s string) Option { return func(c *config) { c.ua = s } }

// WithMiddleware adds middleware; the first given is the outermost. A nil
// Middleware is an *InputError.
func WithMiddleware(m ...Middleware) Option {
	return func(c *config) {
		for i, mw := range m {
			if mw == nil {
				c.errs = append(c.errs, apierr.Invalid(fmt.Sprintf("WithMiddleware[%d]", i), "nil middleware"))
			}
		}
		c.middleware = append(c.middleware, m...)
	}
}

// WithMaxResponseSize bounds, in bytes, an answer that is read whole (the
// JSON answer of every call, after decompression); a longer one gives a
// *ResponseTooLargeError naming the call and the limit, and costs at most
// about the limit in memory. The default is 8 MiB, far above any answer of
// the API. Streams (command output and logs, file downloads) are not
// bounded by it; error answers are read up to 64 KiB.
func WithMaxResponseSize(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.errs = append(c.errs, apierr.Invalid("WithMaxResponseSize", "must be positive, got %d", n))
		}
		c.maxAnswer = n
	}
}

// WithRequestTimeout bounds each attempt of a non-streaming request.
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithAutoResume sets whether a Sandbox handle resumes its sandbox when a
// call finds the session stopped (410) or stopping (422), and replays the
// call once. It is on by default. Replays happen only after the API refused
// the call outright, never after a stream broke. When the resume fails, the
// call returns the resume's error first, so that errors.As finds its
// *APIError (ErrSnapshotNotFound: the sandbox cannot be resumed, recreate
// it), with the refusal that led to it wrapped after it (errors.Is(err,
// ErrGone) holds).
func WithAutoResume(on bool) Option { return func(c *config) { c.autoResume = on } }

// WithOnResume sets a function called after a Sandbox handle resumed.
func WithOnResume(f func(ResumeEvent)) Option { return func(c *config) { c.onResume = f } }

// ReattachPolicy configures how commands outlive cut streams; see
// WithReattachPolicy.
type ReattachPolicy struct {
	// Disabled turns re-attachment off: a cut stream ends the call with
	// an error matching ErrStreamEnded.
	Disabled bool
	// OnReattach, if set, is called before each re-attachment. Every
	// re-attachment is also logged at level Info.
	OnReattach func(ReattachEvent)
}

// ReattachEvent describes one re-attachment to a command about to happen.
type ReattachEvent struct {
	SandboxName string
	SessionID   string
	CommandID   string
	// Op is what was cut: "run" (an attached run), "logs" or "wait".
	Op string
	// Attempt counts the re-attachments of this call, 1 for the first.
	Attempt int
	// Delivered is how many output bytes were delivered before the cut;
	// they are skipped when the logs are replayed.
	Delivered int64
	// Err is how the stream ended, or nil when it ended cleanly while the
	// command still ran.
	Err error
}

func (p ReattachPolicy) conn() conn.ReattachPolicy {
	cp := conn.ReattachPolicy{Disabled: p.Disabled}
	if f := p.OnReattach; f != nil {
		cp.OnReattach = func(e conn.ReattachEvent) { f(ReattachEvent(e)) }
	}
	return cp
}

// WithReattachPolicy configures re-attachment to a command whose stream
// was cut before it proved the command finished (hosted Vercel's edge
// cuts streams after about six minutes). By default every command run,
// Handle.Wait, Handle.Logs and Handle.Output re-attaches, without running
// the command again, and delivers each output byte once; re-attachments
// are logged and reported to OnReattach.
func WithReattachPolicy(p ReattachPolicy) Option { return func(c *config) { c.reattach = p } }

// NewClient returns a client. Options are validated at once; credentials
// are looked up on the first call. Without WithBaseURL, the base URL comes
// from the environment variable EnvBaseURL when it is set.
func NewClient(opts ...Option) (*Client, error) {
	cfg := config{autoResume: true}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.token != nil {
		p := auth.Static(auth.Credentials{Token: *cfg.token, TeamID: cfg.team, ProjectID: cfg.project})
		if _, err := p.Credentials(context.Background()); err != nil {
			cfg.errs = append(cfg.errs, apierr.Invalid("WithToken", "%v (the team and project come from WithTeam and WithProject)", err))
		}
		cfg.provider = p
	}
	if len(cfg.errs) > 0 {
		return nil, cfg.errs[0]
	}
	if cfg.provider == nil {
		cfg.provider = vercelcli.Default(auth.DefaultOptions{})
	}
	rt := cfg.transport
	timeout := cfg.timeout
	if cfg.httpClient != nil {
		if rt == nil {
			rt = cfg.httpClient.Transport
			if rt == nil {
				rt = http.DefaultTransport
			}
		}
		if timeout == 0 {
			timeout = cfg.httpClient.Timeout
		}
	}
	mws := make([]httpcore.Middleware, len(cfg.middleware))
	for i, m := range cfg.middleware {
		mws[i] = m.core()
	}
	baseURL, baseURLField := cfg.resolveBaseURL()
	core, err := httpcore.New(httpcore.Config{
		BaseURL: baseURL, BaseURLField: baseURLField, Provider: cfg.provider, Transport: rt, TeamID: cfg.team,
		ProjectID: cfg.project, Retry: cfg.retry.core(), Logger: cfg.logger, UserAgent: cfg.ua,
		Middleware: mws, RequestTimeout: timeout, MaxResponseSize: cfg.maxAnswer, Observer: cfg.obs,
	})
	if err != nil {
		return nil, err
	}
	return &Client{core: core, autoResume: cfg.autoResume, onResume: cfg.onResume, reattach: cfg.reattach.conn(), upload: cfg.upload}, nil
}

// project returns the project the calls act for.
func (c *Client) project(ctx context.Context) (string, error) {
	_, p, err := c.core.Scope(ctx)
	return p, err
}
