package auth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Defaults of OIDCOptions.
const (
	// DefaultRefreshBuffer is how long before its expiry a token is renewed.
	DefaultRefreshBuffer = 5 * time.Minute
	// DefaultRefreshTimeout bounds one refresh, whoever waits for it.
	DefaultRefreshTimeout = 30 * time.Second
	// DefaultRefreshBackoff is how long a failed refresh is not retried.
	DefaultRefreshBackoff = 10 * time.Second
)

// Target names the project a token is minted for, and its team.
type Target struct {
	ProjectID string
	TeamID    string
}

// Refresher obtains a new OIDC token for a project. The target's ids come
// from the claims of the current token and may be empty when there is
// none; the refresher decides how to fill them in. Refresh must return when
// ctx ends.
type Refresher interface {
	Refresh(ctx context.Context, t Target) (token string, err error)
}

// RefresherFunc adapts a function to Refresher.
type RefresherFunc func(ctx context.Context, t Target) (string, error)

// Refresh calls f. A nil f gives an *InputError.
func (f RefresherFunc) Refresh(ctx context.Context, t Target) (string, error) {
	if f == nil {
		return "", apierr.Invalid("RefresherFunc", "nil function")
	}
	return f(ctx, t)
}

// OIDCOptions configure NewOIDCProvider. Source, Refresher or both must
// be set.
type OIDCOptions struct {
	// Source supplies the current token, read on every call. A token it has
	// not returned before replaces the held one, unless the held one is good
	// and the new one is already due for refresh. Nil: no source; every
	// token comes from Refresher.
	Source RawSource

	// Refresher renews a token that is absent, expiring or rejected. Nil:
	// never refresh.
	Refresher Refresher

	// Label is the Source recorded in Credentials. Default SourceOIDCEnv.
	Label Source

	// Buffer: a token is refreshed once now+Buffer passes its expiry
	// (a token whose expiry equals now+Buffer is still used). 0 means
	// DefaultRefreshBuffer; a negative value means no buffer.
	Buffer time.Duration

	// RefreshTimeout bounds one refresh. It runs detached from the caller's
	// context, so a caller that gives up does not cancel it for others.
	// 0 means DefaultRefreshTimeout.
	RefreshTimeout time.Duration

	// RefreshBackoff is how long after a failed refresh no new attempt is
	// made; calls in that window get the outcome of the failure at once.
	// 0 means DefaultRefreshBackoff; a negative value means no backoff.
	RefreshBackoff time.Duration

	// StaleOnRefreshFailure returns a token that is past its expiry when it
	// cannot be refreshed, as the TypeScript SDK does, and lets the API reject
	// it. By default such a call fails with ErrRefreshFailed.
	StaleOnRefreshFailure bool

	// OnRefreshError, when set, is called with the error of every failed
	// refresh, including failures that are hidden because the held token is
	// still valid. It may be called from another goroutine and should return
	// quickly: callers wait for the refresh until it does.
	OnRefreshError func(error)

	// Clock tells the time of every expiry and backoff decision; nil means
	// the wall clock. Tests pass an authtest.Clock.
	Clock interface{ Now() time.Time }

	sys host.System // the outside world (VERCEL_URL); zero: the real one
}

// OIDCProvider supplies credentials from a Vercel OIDC token, refreshing it
// shortly before it expires. Team and project come from the token's owner_id
// and project_id claims.
//
// Concurrent callers that need a refresh share one: it is run once per
// target, on a context detached from the callers' (bounded by
// RefreshTimeout), and each caller waits for it only as long as its own
// context allows. The process environment is never modified.
//
// When a refresh fails:
//   - a token that is only inside the buffer (not yet past its expiry) is
//     still returned;
//   - a token past its expiry, or one rejected through Invalidate, gives an
//     error matching ErrRefreshFailed (or the stale token with
//     StaleOnRefreshFailure);
//   - with no token at all the error is an *OIDCContextError.
//
// OIDCProvider implements Invalidator. Create one with NewOIDCProvider: the
// zero value, or a nil pointer, gives an *InputError.
type OIDCProvider struct {
	src       RawSource
	refresher Refresher
	label     Source
	buffer    time.Duration
	timeout   time.Duration
	backoff   time.Duration
	staleOK   bool
	onErr     func(error)
	clock     host.Clock
	sys       host.System
	group     singleflight.Group
	waitHook  func() // tests: called when a caller starts waiting for a refresh
	invalid   error  // the options NewOIDCProvider refused
	mu        sync.Mutex
	tok       string
	claims    Claims
	lastRaw   string // last token seen from src
	rejected  bool   // tok was rejected by the API
	gen       uint64 // bumped whenever tok changes
	failUntil time.Time
	failErr   error
}

// NewOIDCProvider returns a provider configured by opts. Options with
// neither Source nor Refresher could never give a token: every call of the
// provider fails with an *InputError naming OIDCOptions.
func NewOIDCProvider(opts OIDCOptions) *OIDCProvider {
	p := newOIDCProvider(opts)
	if opts.Source == nil && opts.Refresher == nil {
		p.invalid = apierr.Invalid("OIDCOptions", "neither Source nor Refresher is set")
	}
	return p
}

// newOIDCProvider is NewOIDCProvider without the check: Default's tiers
// may have no refresher and report that in their guidance error.
func newOIDCProvider(opts OIDCOptions) *OIDCProvider {
	p := &OIDCProvider{
		src:       opts.Source,
		refresher: opts.Refresher,
		label:     opts.Label,
		buffer:    durationOr(opts.Buffer, DefaultRefreshBuffer),
		timeout:   durationOr(opts.RefreshTimeout, DefaultRefreshTimeout),
		backoff:   durationOr(opts.RefreshBackoff, DefaultRefreshBackoff),
		staleOK:   opts.StaleOnRefreshFailure,
		onErr:     opts.OnRefreshError,
		clock:     opts.Clock,
		sys:       opts.sys,
	}
	if p.label == "" {
		p.label = SourceOIDCEnv
	}
	if p.clock == nil {
		p.clock = opts.sys
	}
	return p
}

// durationOr maps 0 to def and negative values to 0.
func durationOr(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// String describes the provider without its token.
func (p *OIDCProvider) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("auth.OIDCProvider{source=%s, team=%q, project=%q, token=%s}",
		p.label, p.claims.OwnerID, p.claims.ProjectID, redact.Value(p.tok))
}

// GoString is String, so %#v does not print the token either.
func (p *OIDCProvider) GoString() string { return p.String() }

// Credentials returns the current token, refreshing it first when needed.
// If ctx ends while waiting for a refresh, it returns ctx.Err() and the
// refresh goes on for the other callers.
func (p *OIDCProvider) Credentials(ctx context.Context) (Credentials, error) {
	switch {
	case p == nil || p.clock == nil:
		return Credentials{}, apierr.Invalid("OIDCProvider", "not made by NewOIDCProvider")
	case p.invalid != nil:
		return Credentials{}, p.invalid
	}
	var raw string
	if p.src != nil {
		tok, ok, err := p.src(ctx)
		if err != nil {
			return Credentials{}, err
		}
		if ok {
			raw = tok
		}
	}
	now := p.clock.Now()

	p.mu.Lock()
	if raw != "" && raw != p.lastRaw {
		c, err := ParseClaims(raw)
		if err != nil {
			p.mu.Unlock()
			return Credentials{}, err
		}
		p.lastRaw = raw
		if p.tok == "" || p.rejected || !p.expiring(c.Expiry, now) {
			p.setTokenLocked(raw, c)
		}
	}
	if p.tok != "" && !p.rejected && !p.expiring(p.claims.Expiry, now) {
		defer p.mu.Unlock()
		return p.credentialsLocked(), nil
	}
	if p.refresher == nil {
		defer p.mu.Unlock()
		return p.failedLocked(errNoRefresher, now)
	}
	if now.Before(p.failUntil) {
		defer p.mu.Unlock()
		return p.failedLocked(p.failErr, now)
	}
	project, team, gen := p.claims.ProjectID, p.claims.OwnerID, p.gen
	p.mu.Unlock()

	ch := p.group.DoChan(team+"|"+project, func() (any, error) {
		return p.refresh(ctx, project, team, gen)
	})
	if p.waitHook != nil {
		p.waitHook()
	}
	select {
	case <-ctx.Done():
		return Credentials{}, ctx.Err()
	case res := <-ch:
		if res.Err == nil {
			return res.Val.(Credentials), nil
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.failedLocked(res.Err, p.clock.Now())
	}
}

var errNoRefresher = errors.New("OIDC token is missing or expiring and no refresher is configured")

// refresh runs once for all callers waiting on the same target.
func (p *OIDCProvider) refresh(ctx context.Context, project, team string, gen uint64) (any, error) {
	// A refresh that finished just before this one was started may already
	// have produced a good token.
	p.mu.Lock()
	if p.gen != gen && p.tok != "" && !p.rejected && !p.expiring(p.claims.Expiry, p.clock.Now()) {
		c := p.credentialsLocked()
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	defer cancel()
	tok, err := p.refresher.Refresh(rctx, Target{ProjectID: project, TeamID: team})
	if err != nil {
		// A refresher's error may quote a server that echoed a token:
		// hide the one held and every token shape.
		p.mu.Lock()
		held := p.tok
		p.mu.Unlock()
		err = redact.Error(err, redact.NewSet(held))
	}
	if err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("OIDC token refresh did not finish within %s: %w", p.timeout, err)
	}
	var c Claims
	if err == nil {
		c, err = ParseClaims(tok)
	}

	p.mu.Lock()
	if err == nil && p.rejected && tok == p.tok {
		err = errors.New("the refresher returned the token the API has just rejected")
	}
	if err != nil {
		p.failUntil = p.clock.Now().Add(p.backoff)
		p.failErr = err
		p.mu.Unlock()
		if p.onErr != nil {
			p.onErr(err)
		}
		return nil, err
	}
	creds := credentialsFrom(tok, c, p.label)
	if p.gen == gen {
		// No other token was adopted while this refresh ran.
		p.setTokenLocked(tok, c)
	}
	p.mu.Unlock()
	return creds, nil
}

// expiring reports whether a token expiring at exp must be refreshed now:
// exp < now+buffer, strictly. A zero exp never expires.
func (p *OIDCProvider) expiring(exp, now time.Time) bool {
	return !exp.IsZero() && exp.Before(now.Add(p.buffer))
}

func (p *OIDCProvider) setTokenLocked(tok string, c Claims) {
	p.tok, p.claims = tok, c
	p.rejected = false
	p.gen++
	p.failUntil, p.failErr = time.Time{}, nil
}

func (p *OIDCProvider) credentialsLocked() Credentials {
	return credentialsFrom(p.tok, p.claims, p.label)
}

func credentialsFrom(tok string, c Claims, label Source) Credentials {
	return Credentials{Token: tok, TeamID: c.OwnerID, ProjectID: c.ProjectID, Expiry: c.Expiry, Source: label}
}

// failedLocked decides what a caller gets when the token needed a refresh
// that failed with cause.
func (p *OIDCProvider) failedLocked(cause error, now time.Time) (Credentials, error) {
	if p.tok == "" {
		return Credentials{}, &OIDCContextError{OnVercel: p.sys.Env("VERCEL_URL") != "", Cause: cause}
	}
	if !p.rejected && !p.claims.Expiry.Before(now) {
		// Inside the buffer but not yet expired: still good.
		return p.credentialsLocked(), nil
	}
	if p.staleOK {
		return p.credentialsLocked(), nil
	}
	return Credentials{}, fmt.Errorf("%w: %w", ErrRefreshFailed, cause)
}

// hasToken reports whether the provider holds a token.
func (p *OIDCProvider) hasToken() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tok != ""
}

// Invalidate marks staleToken as rejected by the API, so the next call to
// Credentials refreshes it. Other tokens are ignored. The refresher is told
// too, when it implements Invalidator.
func (p *OIDCProvider) Invalidate(staleToken string) {
	if p == nil || staleToken == "" {
		return
	}
	p.mu.Lock()
	if staleToken == p.tok {
		p.rejected = true
	}
	p.mu.Unlock()
	if inv, ok := p.refresher.(Invalidator); ok {
		inv.Invalidate(staleToken)
	}
}
