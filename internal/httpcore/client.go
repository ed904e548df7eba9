// Package httpcore is the HTTP engine under every API call: URL building,
// credentials, the user agent, middleware, retries through
// go-retryablehttp, and the translation of answers into typed errors.
package httpcore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/loopback"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/version"
)

// Version is the library version sent in the user agent.
const Version = version.Version

// RoundTripFunc is one step of a middleware chain.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Middleware wraps every attempt of every request. It must call next at
// most once per invocation and return its answer or an error.
type Middleware func(req *http.Request, next RoundTripFunc) (*http.Response, error)

// Config configures a Client.
type Config struct {
	BaseURL string
	// BaseURLField names BaseURL in errors (an environment variable that
	// gave it, say); "": "BaseURL".
	BaseURLField   string
	Provider       auth.Provider
	Transport      http.RoundTripper // nil: a clone of http.DefaultTransport keeping up to 100 idle connections
	TeamID         string            // overrides the provider's team
	ProjectID      string            // overrides the provider's project
	Retry          RetryPolicy
	Logger         *slog.Logger // nil: discard
	UserAgent      string       // suffix appended to the library's user agent
	Middleware     []Middleware
	RequestTimeout time.Duration // bounds a non-streaming call, retries and reading the answer included; 0: none
	// MaxResponseSize bounds an answer read whole (after decompression);
	// 0: DefaultMaxResponseSize. Streams are not bounded by it.
	MaxResponseSize int64
	// Observer, when set, observes every attempt (under the middleware,
	// next to the transport) and is told of retries.
	Observer observe.Observer
}

// DefaultMaxResponseSize is the default bound of an answer read whole:
// far above any answer of the API (a page of 50 sandboxes is tens of KiB),
// far below what would hurt a process.
const DefaultMaxResponseSize = 8 << 20

// Client sends API calls. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	provider  auth.Provider
	transport http.RoundTripper // the middleware chain over the user's transport
	teamID    string
	projectID string
	retry     RetryPolicy
	log       *slog.Logger
	ua        string
	timeout   time.Duration
	maxAnswer int64 // bytes of an answer read whole
	obs       observe.Observer
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	field := cmp.Or(cfg.BaseURLField, "BaseURL")
	if cfg.BaseURL == "" {
		return nil, apierr.Invalid(field, "must not be empty")
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil {
		// Not the URL itself: its user info may hold a password.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, apierr.Invalid(field, "%v", err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, apierr.Invalid(field, "must be an absolute http(s) URL, got scheme %q", u.Scheme)
	}
	if err := loopback.Check(field, u); err != nil {
		return nil, err
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, apierr.Invalid(field, "must not carry user info, a query or a fragment")
	}
	if cfg.Provider == nil {
		return nil, apierr.Invalid("Credentials", "no credentials provider")
	}
	if cfg.MaxResponseSize < 0 {
		return nil, apierr.Invalid("MaxResponseSize", "must not be negative")
	}
	if cfg.RequestTimeout < 0 {
		return nil, apierr.Invalid("RequestTimeout", "must not be negative")
	}
	rp := cfg.Retry.withDefaults()
	if rp.BaseDelay > rp.MaxDelay {
		return nil, apierr.Invalid("RetryPolicy.BaseDelay", "greater than MaxDelay")
	}
	base := cfg.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Every call goes to one host; the default of 2 idle connections
		// per host would make concurrent callers open and drop
		// connections all the time.
		t.MaxIdleConnsPerHost = 100
		base = t
	}
	if loopback.NeedsDialer(u) {
		t, err := loopback.Transport(field, u, base)
		if err != nil {
			return nil, err
		}
		base = t
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		base:      u,
		provider:  cfg.Provider,
		teamID:    cfg.TeamID,
		projectID: cfg.ProjectID,
		retry:     rp,
		log:       log,
		timeout:   cfg.RequestTimeout,
		maxAnswer: cmp.Or(cfg.MaxResponseSize, DefaultMaxResponseSize),
		obs:       cfg.Observer,
	}
	c.ua = fmt.Sprintf("vercel-sandbox-go/%s (Go/%s; %s/%s)", Version, strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH)
	if s := strings.TrimSpace(cfg.UserAgent); s != "" {
		c.ua += " " + s
	}
	var rt http.RoundTripper = base
	if mw := observe.Middleware(cfg.Observer); mw != nil {
		rt = RoundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, base.RoundTrip) })
	}
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		mw, next := cfg.Middleware[i], rt
		rt = RoundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, next.RoundTrip) })
	}
	c.transport = rt
	return c, nil
}

// httpClient returns an *http.Client for one call: it carries credentials,
// user agent and middleware, without retries, and records in sent the
// tokens it sends. It never follows redirects: the API never redirects,
// and following one could carry the token to another host.
func (c *Client) httpClient(sent *sentTokens) *http.Client {
	return &http.Client{
		Transport:     &authTransport{c: c, next: c.transport, sent: sent},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Observer returns the client's observer, nil when it has none.
func (c *Client) Observer() observe.Observer { return c.obs }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// Scope returns the team and project the calls act for.
func (c *Client) Scope(ctx context.Context) (team, project string, err error) {
	cr, err := c.provider.Credentials(ctx)
	if err != nil {
		return "", "", err
	}
	team, project = cr.TeamID, cr.ProjectID
	if c.teamID != "" {
		team = c.teamID
	}
	if c.projectID != "" {
		project = c.projectID
	}
	return team, project, nil
}
