package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/loopback"
)

// Option configures a Verifier. A bad value makes NewVerifier fail with an
// *InputError naming the option; a nil Option is ignored.
type Option func(*config)

type config struct {
	origin   string
	issuers  []string
	invalid  func(http.ResponseWriter, *http.Request, error)
	client   *http.Client
	now      func() time.Time
	interval time.Duration
	errs     []error
}

func defaultConfig() config {
	return config{
		invalid:  forbidden,
		client:   http.DefaultClient,
		now:      time.Now,
		interval: 30 * time.Second,
	}
}

// forbidden is the default invalid-request handler.
func forbidden(w http.ResponseWriter, _ *http.Request, _ error) {
	http.Error(w, "Forbidden", http.StatusForbidden)
}

// fail records that option was given a bad value, as an *InputError
// naming the option.
func (c *config) fail(option, format string, a ...any) {
	c.errs = append(c.errs, apierr.Invalid(option, format, a...))
}

// WithOrigin sets the scheme and host (with the port, if any) at which the
// sandboxes' forwardURL reaches this server, such as
// "https://broker.example.com". The token's audience is checked against it
// instead of the request's r.TLS and r.Host.
func WithOrigin(origin string) Option {
	return func(c *config) {
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || strings.TrimRight(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
			c.fail("WithOrigin", "want a scheme and host such as https://broker.example.com")
			return
		}
		c.origin = originOf(u.Scheme, u.Host)
	}
}

// WithTrustedIssuer trusts tokens whose iss claim is exactly issuer, with
// keys from issuer + "/.well-known/jwks". The issuers named replace the
// default, Vercel's global issuer https://oidc.vercel.com: a project whose
// OIDC issuer mode is Team sends tokens of its team's issuer,
// https://oidc.vercel.com/<team slug>, which must be named; tests and local
// demonstrations name one of their own. No other issuer is trusted, and
// nothing is fetched for one. The issuer must use https, or http to a
// loopback host (127.0.0.0/8, ::1 or localhost, which is dialled at
// 127.0.0.1 or ::1 and never looked up, so it needs a client whose
// transport is an *http.Transport); *.localhost is refused. Nothing else,
// such as the environment, adds an issuer.
func WithTrustedIssuer(issuer string) Option {
	return func(c *config) {
		u, err := url.Parse(issuer)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
			loopback.Check("WithTrustedIssuer", u) != nil {
			c.fail("WithTrustedIssuer", "want an https URL, or an http URL of a loopback host")
			return
		}
		c.issuers = append(c.issuers, issuer)
	}
}

// WithInvalidRequestHandler sets the handler of requests that fail a check.
// It receives the request without the five forwarded headers, and an error
// that matches one of the package's Err values. The default answers 403
// Forbidden.
func WithInvalidRequestHandler(h func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *config) {
		if h == nil {
			c.fail("WithInvalidRequestHandler", "nil handler")
			return
		}
		c.invalid = h
	}
}

// WithHTTPClient sets the client that fetches key sets (default
// http.DefaultClient). Its transport is used as it is; redirects are never
// followed, and each fetch is bounded to 5 seconds besides the client's own
// Timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) {
		if hc == nil {
			c.fail("WithHTTPClient", "nil client")
			return
		}
		c.client = hc
	}
}

// WithClock sets the clock that token times and key-set ages are compared
// with (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now == nil {
			c.fail("WithClock", "nil clock")
			return
		}
		c.now = now
	}
}

// WithRefreshInterval sets the least time between two fetches of one
// issuer's key set (default 30 seconds), whatever asks for them: a token
// whose key id is not in the cached set, or a set older than 10 minutes.
// Within it, a token whose key is not in the cached set is refused with
// ErrUnknownKey.
func WithRefreshInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("WithRefreshInterval", "want a positive interval, got %v", d)
			return
		}
		c.interval = d
	}
}

func (c *config) err() error { return errors.Join(c.errs...) }

// dialLocalhost makes the key-set client dial an issuer named localhost
// at 127.0.0.1 or ::1, never through DNS: whoever answered that lookup
// could serve keys of their own.
func (c *config) dialLocalhost() error {
	for _, iss := range c.issuers {
		u, _ := url.Parse(iss) // checked by WithTrustedIssuer
		if !loopback.NeedsDialer(u) {
			continue
		}
		t, err := loopback.Transport("WithTrustedIssuer", u, c.client.Transport)
		if err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
		hc := *c.client
		hc.Transport = t
		c.client = &hc
		return nil
	}
	return nil
}
