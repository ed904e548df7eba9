// Package httpcore is the HTTP engine under every API call: URL building,
// credentials, the user agent, middleware, retries through
// go-retryablehttp, and the translation of answers into typed errors.
package httpcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Version is the library version sent in the user agent.
const Version = "0.1.0"

// RoundTripFunc is one step of a middleware chain.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Middleware wraps every attempt of every request. It must call next at
// most once per invocation and return its answer or an error.
type Middleware func(req *http.Request, next RoundTripFunc) (*http.Response, error)

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
	// Zero means 20 s.
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

// Config configures a Client.
type Config struct {
	BaseURL        string
	Provider       auth.Provider
	Transport      http.RoundTripper // nil: a clone of http.DefaultTransport keeping up to 100 idle connections
	TeamID         string            // overrides the provider's team
	ProjectID      string            // overrides the provider's project
	Retry          RetryPolicy
	Logger         *slog.Logger // nil: discard
	UserAgent      string       // suffix appended to the library's user agent
	Middleware     []Middleware
	RequestTimeout time.Duration // bounds a non-streaming call, retries and reading the answer included; 0: none
}

// Client sends API calls. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	provider  auth.Provider
	http      *http.Client
	teamID    string
	projectID string
	retry     RetryPolicy
	log       *slog.Logger
	ua        string
	timeout   time.Duration
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, apierr.Invalid("BaseURL", "must not be empty")
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil {
		return nil, apierr.Invalid("BaseURL", "%v", err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, apierr.Invalid("BaseURL", "must be an absolute http(s) URL, got scheme %q", u.Scheme)
	}
	if u.Scheme == "http" && !IsLoopback(u.Hostname()) {
		return nil, apierr.Invalid("BaseURL", "plain http is only allowed to a loopback address; credentials would travel in clear text to %s", u.Host)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, apierr.Invalid("BaseURL", "must not carry user info, a query or a fragment")
	}
	if cfg.Provider == nil {
		return nil, apierr.Invalid("Credentials", "no credentials provider")
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
	}
	c.ua = fmt.Sprintf("vercel-sandbox-go/%s (Go/%s; %s/%s)", Version, strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH)
	if s := strings.TrimSpace(cfg.UserAgent); s != "" {
		c.ua += " " + s
	}
	var rt http.RoundTripper = base
	for i := len(cfg.Middleware) - 1; i >= 0; i-- {
		mw, next := cfg.Middleware[i], rt
		rt = RoundTripFunc(func(r *http.Request) (*http.Response, error) { return mw(r, next.RoundTrip) })
	}
	c.http = &http.Client{
		Transport: &authTransport{c: c, next: rt},
		// The API never redirects; following one could carry the token to
		// another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// IsLoopback reports whether host names the local machine.
func IsLoopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// HTTPClient returns the *http.Client that carries credentials, user agent
// and middleware, without retries. It never follows redirects.
func (c *Client) HTTPClient() *http.Client { return c.http }

// Logger returns the client's logger.
func (c *Client) Logger() *slog.Logger { return c.log }

// BaseURL returns the base URL.
func (c *Client) BaseURL() string { return c.base.String() }

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

// Safety says whether a call may be sent again after a failure.
type Safety int

const (
	// Idempotent calls (GET, DELETE, stop, kill, waits, file reads and
	// writes) are retried on transport errors, 429 and 5xx.
	Idempotent Safety = iota
	// Unsafe calls (create, run command, extend, snapshot) are re-sent only
	// when the failure provably happened before the server could act: a
	// dial error or a 429. Any other failure gives an OutcomeUnknownError.
	Unsafe
)

// Call is one API request.
type Call struct {
	Method string
	Path   string // below the base URL, starting with "/"
	Query  url.Values
	// JSON is marshalled as the body when non-nil.
	JSON any
	// Body reopens a raw body for each attempt. It makes the body replayable.
	Body func() (io.ReadCloser, error)
	// OneShot is a raw body that cannot be reopened: the call is sent once.
	OneShot       io.Reader
	ContentLength int64  // of Body or OneShot; 0 or -1 when unknown
	ContentType   string // default application/json
	Header        http.Header
	Safety        Safety
	Op            string // what the call does, for errors ("run command")
	SandboxName   string
	SessionID     string
	// Stream calls are not bounded by the request timeout: their body is
	// read by the caller for as long as it lasts.
	Stream bool
}

// Do sends the call and returns the 2xx response, whose body the caller
// must close. A non-2xx answer becomes an *apierr.Error; an unsafe call that
// may have reached the server becomes an *apierr.OutcomeUnknownError.
func (c *Client) Do(ctx context.Context, call *Call) (*http.Response, error) {
	resp, cancel, err := c.do(ctx, call)
	if err != nil {
		return nil, err
	}
	if cancel != nil {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	}
	return resp, nil
}

// JSON sends the call and decodes a 2xx JSON answer into out (which may be
// nil). An empty body decodes as {}.
func (c *Client) JSON(ctx context.Context, call *Call, out any) error {
	ctx = withCallInfo(ctx, call)
	resp, cancel, err := c.do(ctx, call)
	if err != nil {
		return err
	}
	if cancel != nil {
		defer cancel()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return c.transportFailure(call, fmt.Errorf("reading response: %w", err))
	}
	if out == nil {
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &apierr.DecodeError{Method: call.Method, Path: call.Path, StatusCode: resp.StatusCode,
			RequestID: resp.Header.Get("X-Vercel-Id"), Excerpt: excerpt(redact.NewSet(infoOf(ctx).secrets()...).Bytes(data)), Err: err}
	}
	return nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

type callKey struct{}

type callInfo struct {
	call *Call

	mu     sync.Mutex
	tokens []string // tokens the attempts of the call sent
}

// withCallInfo returns ctx carrying a callInfo for call, unless it carries
// one already.
func withCallInfo(ctx context.Context, call *Call) context.Context {
	if info, ok := ctx.Value(callKey{}).(*callInfo); ok && info.call == call {
		return ctx
	}
	return context.WithValue(ctx, callKey{}, &callInfo{call: call})
}

// infoOf returns the callInfo of ctx, or nil.
func infoOf(ctx context.Context) *callInfo {
	info, _ := ctx.Value(callKey{}).(*callInfo)
	return info
}

// noteToken records a token sent by an attempt of the call of ctx, so that
// an answer echoing it can be redacted.
func noteToken(ctx context.Context, tok string) {
	info := infoOf(ctx)
	if info == nil || len(tok) < minRedacted {
		return
	}
	info.mu.Lock()
	defer info.mu.Unlock()
	for _, t := range info.tokens {
		if t == tok {
			return
		}
	}
	info.tokens = append(info.tokens, tok)
}

// secrets returns the tokens the call sent. info may be nil.
func (info *callInfo) secrets() []string {
	if info == nil {
		return nil
	}
	info.mu.Lock()
	defer info.mu.Unlock()
	return slices.Clone(info.tokens)
}

// minRedacted is the shortest token redacted from answers: replacing a
// shorter one would mangle the text without protecting anything.
const minRedacted = 8

func (c *Client) do(ctx context.Context, call *Call) (*http.Response, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	u := *c.base
	u.Path = c.base.Path + call.Path
	u.RawPath = ""
	if call.Query != nil {
		u.RawQuery = call.Query.Encode()
	}
	var cancel context.CancelFunc
	if c.timeout > 0 && !call.Stream {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	ctx = withCallInfo(ctx, call)
	info := infoOf(ctx)
	fail := func(err error) (*http.Response, context.CancelFunc, error) {
		if cancel != nil {
			cancel()
		}
		return nil, nil, err
	}

	var body any
	switch {
	case call.JSON != nil:
		b, err := json.Marshal(call.JSON)
		if err != nil {
			return fail(fmt.Errorf("vercel sandbox: encoding request: %w", err))
		}
		body = b
	case call.Body != nil:
		open := call.Body
		body = retryablehttp.ReaderFunc(func() (io.Reader, error) { return open() })
	}

	if call.OneShot != nil {
		req, err := http.NewRequestWithContext(ctx, call.Method, u.String(), call.OneShot)
		if err != nil {
			return fail(err)
		}
		req.GetBody = nil // sent once, never replayed
		c.prepare(req, call)
		resp, err := c.http.Do(req)
		if err != nil {
			return fail(c.transportFailure(call, err))
		}
		if resp.StatusCode/100 != 2 {
			defer resp.Body.Close()
			return fail(c.statusFailure(call, resp, 1, info.secrets()))
		}
		return resp, cancel, nil
	}

	req, err := retryablehttp.NewRequestWithContext(ctx, call.Method, u.String(), body)
	if err != nil {
		return fail(err)
	}
	c.prepare(req.Request, call)

	var (
		lastStatus int
		lastErr    error
		nextWait   time.Duration
		attempts   int
		unknown    bool
	)
	rp := c.retry
	rc := &retryablehttp.Client{
		HTTPClient:   c.http,
		RetryMax:     rp.MaxRetries,
		RetryWaitMin: rp.BaseDelay,
		RetryWaitMax: rp.MaxDelay,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			attempts++
			lastErr, lastStatus = err, 0
			if resp != nil {
				lastStatus = resp.StatusCode
			}
			if ctx.Err() != nil {
				// An attempt cut short by ctx may have reached the server.
				unknown = call.Safety == Unsafe && mayHaveActed(resp, err)
				return false, ctx.Err()
			}
			retry, wait := c.shouldRetry(call, resp, err)
			unknown = !retry && err != nil && call.Safety == Unsafe && mayHaveActed(nil, err)
			nextWait = wait
			return retry, nil
		},
		Backoff: func(min, max time.Duration, n int, _ *http.Response) time.Duration {
			wait := nextWait + jitter(min, max, n)
			ev := RetryEvent{Method: call.Method, Path: call.Path, Attempt: n + 2, StatusCode: lastStatus, Err: lastErr, Wait: wait}
			c.log.LogAttrs(ctx, slog.LevelWarn, "vercel sandbox: retrying request",
				slog.String("method", call.Method), slog.String("path", call.Path),
				slog.Int("attempt", ev.Attempt), slog.Int("status", lastStatus),
				slog.Any("error", lastErr), slog.Duration("wait", wait))
			if rp.OnRetry != nil {
				rp.OnRetry(ev)
			}
			return wait
		},
		ErrorHandler: func(resp *http.Response, err error, n int) (*http.Response, error) {
			return resp, err
		},
	}

	resp, err := rc.Do(req)
	if err != nil {
		if resp != nil {
			// An answer that came as ctx ended.
			resp.Body.Close()
		}
		// unknown describes the last attempt. When it is false the last
		// attempt provably did nothing (or the call is idempotent), even if
		// ctx ended during the backoff that followed.
		if unknown {
			return fail(c.unknown(call, err))
		}
		return fail(unwrapURLError(err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return fail(c.statusFailure(call, resp, attempts, info.secrets()))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "vercel sandbox: request done",
		slog.String("method", call.Method), slog.String("path", call.Path),
		slog.Int("status", resp.StatusCode), slog.String("request_id", resp.Header.Get("X-Vercel-Id")))
	return resp, cancel, nil
}

// statusFailure turns a non-2xx answer into an error: an *apierr.Error, or
// for an unsafe call answered with 5xx, an OutcomeUnknownError around it.
// Any of secrets (the tokens the call sent) found in the answer is redacted.
func (c *Client) statusFailure(call *Call, resp *http.Response, attempts int, secrets []string) error {
	apiErr := c.apiError(call, resp, attempts, secrets)
	if call.Safety == Unsafe && resp.StatusCode >= 500 {
		return c.unknown(call, apiErr)
	}
	return apiErr
}

func (c *Client) prepare(req *http.Request, call *Call) {
	for k, v := range call.Header {
		req.Header[k] = v
	}
	ct := call.ContentType
	if ct == "" {
		ct = wire.ContentJSON
	}
	req.Header.Set("Content-Type", ct)
	if call.ContentLength > 0 {
		req.ContentLength = call.ContentLength
	}
}

// shouldRetry decides whether a failed attempt is sent again, and the extra
// wait a Retry-After header asks for.
func (c *Client) shouldRetry(call *Call, resp *http.Response, err error) (bool, time.Duration) {
	if err != nil {
		if call.Safety == Unsafe {
			return isDialError(err), 0
		}
		return isRetryableTransportError(err), 0
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if ok && ra > c.retry.MaxRetryAfter {
			return false, 0
		}
		return true, ra
	case resp.StatusCode >= 500 && call.Safety == Idempotent:
		ra, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if ra > c.retry.MaxRetryAfter {
			return false, 0
		}
		return true, ra
	}
	return false, 0
}

func jitter(base, max time.Duration, n int) time.Duration {
	d := float64(base) * float64(int64(1)<<min(n, 30)) * (1 + rand.Float64())
	if d > float64(max) {
		d = float64(max)
	}
	return time.Duration(d)
}

// ParseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
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

// mayHaveActed reports whether the server may have acted on an attempt
// that ended with resp or err: anything but a 429 or a failure before the
// request was sent.
func mayHaveActed(resp *http.Response, err error) bool {
	if err != nil {
		return !isDialError(err) && !isCredentialError(err) && !errors.Is(err, errInsecure)
	}
	return resp == nil || resp.StatusCode != http.StatusTooManyRequests
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

func (c *Client) unknown(call *Call, err error) error {
	op := call.Op
	if op == "" {
		op = call.Method + " " + call.Path
	}
	return &apierr.OutcomeUnknownError{Op: op, Method: call.Method, Path: call.Path,
		SandboxName: call.SandboxName, SessionID: call.SessionID, Err: unwrapURLError(err)}
}

func (c *Client) transportFailure(call *Call, err error) error {
	if call.Safety == Unsafe && mayHaveActed(nil, err) {
		return c.unknown(call, err)
	}
	return unwrapURLError(err)
}

// unwrapURLError drops the *url.Error layer, whose message repeats the
// full URL, and keeps the cause.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("vercel sandbox: %s %s: %w", ue.Op, redactURL(ue.URL), ue.Err)
	}
	return err
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery = ""
	u.User = nil
	return u.String()
}

const maxErrorBody = 64 << 10

func (c *Client) apiError(call *Call, resp *http.Response, attempts int, secrets []string) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	hide := redact.NewSet(secrets...)
	data = hide.Bytes(data)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	e := &apierr.Error{
		StatusCode:  resp.StatusCode,
		RequestID:   hide.String(resp.Header.Get("X-Vercel-Id")),
		Method:      call.Method,
		Path:        call.Path,
		SandboxName: call.SandboxName,
		SessionID:   call.SessionID,
		Attempts:    attempts,
	}
	if ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		e.RetryAfter = ra
	}
	var body wire.ErrorBody
	if err := json.Unmarshal(data, &body); err == nil && (body.Error.Code != "" || body.Error.Message != "") {
		// Decoding may have unescaped a token that the raw body hid.
		e.Code, e.Message = hide.String(body.Error.Code), hide.String(body.Error.Message)
	} else {
		e.Message = excerpt(data)
	}
	return e
}

func excerpt(data []byte) string {
	const n = 512
	s := strings.ToValidUTF8(string(bytes.TrimSpace(data)), "\uFFFD")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
