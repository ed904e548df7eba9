package httpcore

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// RetryPolicy configures retries of failed requests.
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
	// its x-ratelimit-reset header. Waits saturate: with MaxRetryAfter
	// at the largest Duration, a Retry-After too large for one waits until
	// the context ends, never wrapping around to no wait.
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

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 2
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 400 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 10 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 20 * time.Second
	}
	return p
}

// Backoff returns the wait before retry n+1 of a request, n counting the
// retries already made (0 before the first): base doubled n times, times
// a random factor in [1, 2), capped at max.
func Backoff(base, max time.Duration, n int) time.Duration {
	d := float64(base) * float64(int64(1)<<min(n, 30)) * (1 + rand.Float64())
	if d >= float64(max) {
		// Compared as floats: float64(max) may round up past the largest
		// Duration, whose conversion would wrap.
		return max
	}
	return time.Duration(d)
}

// addWait returns a+b for waits (>= 0), saturating at the largest
// Duration: a huge Retry-After means "longer than anyone waits", never a
// sum that wraps around to no wait at all.
func addWait(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// retryPolicy adapts one call to go-retryablehttp. After each attempt the
// engine asks CheckRetry whether to send the request again; before each
// retry it asks Backoff how long to wait. The value lives for one call and
// remembers what the last attempt did, for the next question and for the
// error the call returns.
type retryPolicy struct {
	ctx  context.Context // of the call, for logging
	call *Call
	conf RetryPolicy
	log  *slog.Logger
	sent *sentTokens // by the call's attempts, to be kept out of errors and logs

	attempts   int           // made so far
	status     int           // of the last attempt's answer, 0 without one
	err        error         // transport error of the last attempt
	retryAfter time.Duration // extra wait the last answer asked for
	// unknown: the last attempt of an unsafe call may have reached the
	// server, so its outcome is unknown.
	unknown bool
}

// client returns a go-retryablehttp client that sends attempts through hc
// and asks p what to do between them.
func (p *retryPolicy) client(hc *http.Client) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   hc,
		RetryMax:     p.conf.MaxRetries,
		RetryWaitMin: p.conf.BaseDelay,
		RetryWaitMax: p.conf.MaxDelay,
		CheckRetry:   p.CheckRetry,
		Backoff:      p.Backoff,
		ErrorHandler: p.ErrorHandler,
	}
}

// CheckRetry records the attempt that ended with resp or err and says
// whether to send the request again.
func (p *retryPolicy) CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	p.attempts++
	p.err, p.status, p.retryAfter = err, 0, 0
	if resp != nil {
		p.status = resp.StatusCode
	}
	// Once ctx is done, stop. An attempt cut short by ctx may still have
	// reached the server.
	if ctx.Err() != nil {
		p.unknown = p.call.Safety == Unsafe && mayHaveActed(resp, err)
		return false, ctx.Err()
	}
	retry, wait := p.shouldRetry(resp, err)
	p.retryAfter = wait
	// A transport error that is not retried leaves an unsafe call in doubt
	// unless the request provably never left.
	p.unknown = !retry && err != nil && p.call.Safety == Unsafe && mayHaveActed(nil, err)
	return retry, nil
}

// shouldRetry decides whether an attempt that ended with resp or err is
// sent again, and the extra wait a Retry-After header asks for.
func (p *retryPolicy) shouldRetry(resp *http.Response, err error) (bool, time.Duration) {
	unsafe := p.call.Safety == Unsafe
	// An unsafe call is re-sent after a transport error only when the
	// request never left (a dial error); an idempotent one unless the
	// error is one no retry can mend (TLS, credentials, plain http).
	if err != nil {
		if unsafe {
			return isDialError(err), 0
		}
		return isRetryableTransportError(err), 0
	}
	// A 429 means the server did not act, so any call may be re-sent;
	// a 5xx only an idempotent one. Either waits for Retry-After, but
	// not longer than MaxRetryAfter: then the error goes to the caller.
	if resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode >= 500 && !unsafe) {
		wait, _ := retryAfter(resp, time.Now())
		if wait > p.conf.MaxRetryAfter {
			return false, 0
		}
		return true, wait
	}
	// Anything else is the answer.
	return false, 0
}

// Backoff returns the wait before retry n+1 (n counting from 0): the
// jittered backoff plus what Retry-After asked for. It logs the retry and
// reports it to OnRetry.
func (p *retryPolicy) Backoff(min, max time.Duration, n int, _ *http.Response) time.Duration {
	wait := addWait(p.retryAfter, Backoff(min, max, n))
	announce(p.ctx, p.log, p.conf, RetryEvent{Method: p.call.Method, Path: p.call.Path,
		Attempt: n + 2, StatusCode: p.status, Err: redact.Error(p.err, redact.NewSet(p.sent.list()...)), Wait: wait})
	return wait
}

// announce logs a retry about to happen and reports it to OnRetry: the
// one place both Do's retries and a caller's own (Pause) are made visible.
// ev.Err has the call's known secrets hidden already; token shapes are
// hidden here too, so that no log line carries one.
func announce(ctx context.Context, log *slog.Logger, conf RetryPolicy, ev RetryEvent) {
	ev.Err = redact.Error(ev.Err, nil)
	log.LogAttrs(ctx, slog.LevelWarn, "vercel sandbox: retrying request",
		slog.String("method", ev.Method), slog.String("path", ev.Path),
		slog.Int("attempt", ev.Attempt), slog.Int("status", ev.StatusCode),
		slog.Any("error", ev.Err), slog.Duration("wait", ev.Wait))
	name := observe.EventRetry
	if ev.StatusCode == http.StatusTooManyRequests {
		name = observe.EventRateLimit
	}
	observe.Event(ctx, name, slog.Int(observe.KeyAttempt, ev.Attempt), slog.Int(observe.KeyStatus, ev.StatusCode),
		slog.Int64(observe.KeyWait, ev.Wait.Milliseconds()))
	if conf.OnRetry != nil {
		conf.OnRetry(ev)
	}
}

// MaxRetries is how many times a call may be sent again after its first
// attempt, by Do or by a caller that repeats it itself.
func (c *Client) MaxRetries() int { return c.retry.MaxRetries }

// Pause waits before a caller sends a call again itself, outside Do's own
// retries (a create whose outcome was unknown is looked up, then re-sent).
// ev.Attempt is the attempt about to be made, 2 for the first retry. Pause
// sets ev.Wait with the backoff Do uses (plus a Retry-After that ev.Err
// carries, up to MaxRetryAfter), announces ev as Do announces its retries,
// and returns ctx's error if ctx ends first.
func (c *Client) Pause(ctx context.Context, ev RetryEvent) error {
	rp := c.retry
	ev.Wait = Backoff(rp.BaseDelay, rp.MaxDelay, max(ev.Attempt-2, 0))
	var ae *apierr.Error
	if errors.As(ev.Err, &ae) && ae.RetryAfter > 0 && ae.RetryAfter <= rp.MaxRetryAfter {
		ev.Wait = addWait(ev.Wait, ae.RetryAfter)
	}
	announce(ctx, c.log, rp, ev)
	return Sleep(ctx, ev.Wait)
}

// Sleep waits d, or returns ctx's cause if ctx ends first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// ErrorHandler hands the last attempt's answer back as it is, so that a
// non-2xx answer becomes an *apierr.Error rather than the engine's
// "giving up" error.
func (p *retryPolicy) ErrorHandler(resp *http.Response, err error, _ int) (*http.Response, error) {
	return resp, err
}

// failure turns the engine's error into the call's error. unknown
// describes the last attempt: when it is false, that attempt provably did
// nothing (or the call is idempotent), even if ctx ended during the
// backoff that followed.
func (p *retryPolicy) failure(err error) error {
	hide := redact.NewSet(p.sent.list()...)
	if p.unknown {
		return outcomeUnknown(p.call, err, hide)
	}
	return transportError(err, hide)
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if math.IsNaN(s) || s < 0 {
			return 0, false
		}
		// A huge value (or an infinite one) must not wrap around to a
		// negative duration: it means "much longer than we will wait".
		if s >= float64(math.MaxInt64)/float64(time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

// retryAfter reads how long an answer asks the client to wait: its
// Retry-After header, or else, on a 429, the reset of its rate-limit window.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
		return d, true
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if rl := parseRateLimit(resp.Header, now); rl != nil && rl.Remaining == 0 && !rl.Reset.IsZero() {
		return max(0, rl.Reset.Sub(now)), true
	}
	return 0, false
}

// parseRateLimit reads the x-ratelimit-* headers hosted Vercel sends on
// every answer; nil when there are none. The reset is a Unix time in
// seconds, or (when small) seconds from now.
func parseRateLimit(h http.Header, now time.Time) *apierr.RateLimit {
	limit, lerr := strconv.Atoi(strings.TrimSpace(h.Get("X-Ratelimit-Limit")))
	remaining, rerr := strconv.Atoi(strings.TrimSpace(h.Get("X-Ratelimit-Remaining")))
	if lerr != nil && rerr != nil {
		return nil
	}
	rl := &apierr.RateLimit{Limit: limit, Remaining: remaining}
	if reset, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64); err == nil && reset > 0 {
		if reset < 1e9 {
			rl.Reset = now.Add(time.Duration(reset) * time.Second)
		} else {
			rl.Reset = time.Unix(reset, 0)
		}
	}
	return rl
}

// mayHaveActed reports whether the server may have acted on an attempt
// that ended with resp or err: anything but a 429 or a failure before the
// request was sent.
func mayHaveActed(resp *http.Response, err error) bool {
	if err != nil {
		return !isDialError(err) && !isCredentialError(err) && !errors.Is(err, errInsecure)
	}
	return resp == nil || resp.StatusCode != http.StatusTooManyRequests
}

// Transient reports whether err, the failure of an idempotent call, is one
// that repeating the call may mend: a transport error that Do would retry,
// a 5xx, or an answer cut before its body was whole.
func Transient(err error) bool {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae.StatusCode >= 500
	}
	var de *apierr.DecodeError
	if errors.As(err, &de) {
		return true
	}
	return isRetryableTransportError(err)
}

// isDialError reports a failure that happened before any byte of the
// request reached the server.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// isRetryableTransportError reports a transport error that another
// attempt may not meet: not a cancellation, a TLS or scheme error, bad
// input, plain http or missing credentials.
func isRetryableTransportError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		msg := ue.Err.Error()
		if strings.Contains(msg, "unsupported protocol scheme") || strings.Contains(msg, "certificate") {
			return false
		}
	}
	var ie *apierr.InputError
	return !errors.As(err, &ie) && !errors.Is(err, errInsecure) && !isCredentialError(err)
}
