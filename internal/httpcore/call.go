package httpcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

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
	// Answered, if set, is given the headers of the 2xx answer to a JSON
	// call, for the facts they alone carry (such as the server's Date).
	Answered func(http.Header)
}

// op names the call for errors: its Op, or its method and path.
func (call *Call) op() string {
	if call.Op != "" {
		return call.Op
	}
	return call.Method + " " + call.Path
}

// Do sends the call and returns the 2xx response, whose body the caller
// must close. A non-2xx answer becomes an *apierr.Error; an unsafe call that
// may have reached the server becomes an *apierr.OutcomeUnknownError.
func (c *Client) Do(ctx context.Context, call *Call) (*http.Response, error) {
	resp, cancel, err := c.do(ctx, call, new(sentTokens))
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
	sent := new(sentTokens)
	resp, cancel, err := c.do(ctx, call, sent)
	if err != nil {
		return err
	}
	if cancel != nil {
		defer cancel()
	}
	defer resp.Body.Close()
	if call.Answered != nil {
		call.Answered(resp.Header)
	}
	data, err := ReadAnswer(resp, c.maxAnswer, call.Op, call.Path)
	var tooLarge *apierr.ResponseTooLargeError
	if errors.As(err, &tooLarge) {
		return err
	}
	if err != nil {
		return transportFailure(call, fmt.Errorf("reading response: %w", err), redact.NewSet(sent.list()...))
	}
	if out == nil {
		return nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if err := json.Unmarshal(data, out); err != nil {
		hide := redact.NewSet(sent.list()...)
		return &apierr.DecodeError{Method: call.Method, Path: call.Path, StatusCode: resp.StatusCode,
			RequestID: hide.String(resp.Header.Get("X-Vercel-Id")), Excerpt: excerpt(hide.Bytes(data)), Err: redact.Error(err, hide)}
	}
	return nil
}

// cancelBody ends the call's timeout when the caller closes the body.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// do sends the call and returns its 2xx answer, and the cancel function of
// the call's timeout (nil without one) that the caller runs once done with
// the body. The tokens the attempts send are recorded in sent.
//
// A call whose body can be sent again goes through go-retryablehttp with
// the call's retryPolicy; a OneShot body goes to the http.Client once.
func (c *Client) do(ctx context.Context, call *Call, sent *sentTokens) (*http.Response, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var cancel context.CancelFunc
	if c.timeout > 0 && !call.Stream {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
	}
	var (
		resp     *http.Response
		attempts = 1
		err      error
	)
	if call.OneShot != nil {
		resp, err = c.sendOnce(ctx, call, sent)
	} else {
		resp, attempts, err = c.sendWithRetries(ctx, call, sent)
	}
	if err == nil && resp.StatusCode/100 != 2 {
		err = statusFailure(call, resp, attempts, sent.list())
		resp.Body.Close()
	}
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, nil, err
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		// The request id is the server's text: it may echo a secret.
		c.log.LogAttrs(ctx, slog.LevelDebug, "vercel sandbox: request done",
			slog.String("method", call.Method), slog.String("path", call.Path), slog.Int("status", resp.StatusCode),
			slog.String("request_id", redact.NewSet(sent.list()...).String(resp.Header.Get("X-Vercel-Id"))))
	}
	return resp, cancel, nil
}

// sendOnce sends a call whose body cannot be reopened, without retries.
func (c *Client) sendOnce(ctx context.Context, call *Call, sent *sentTokens) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, call.Method, c.url(call), call.OneShot)
	if err != nil {
		return nil, err
	}
	req.GetBody = nil // sent once, never replayed
	c.prepare(req, call)
	resp, err := c.httpClient(sent).Do(req)
	if err != nil {
		return nil, transportFailure(call, err, redact.NewSet(sent.list()...))
	}
	return resp, nil
}

// sendWithRetries sends the call, again as its retryPolicy allows, and
// returns the last answer and the number of attempts made.
func (c *Client) sendWithRetries(ctx context.Context, call *Call, sent *sentTokens) (*http.Response, int, error) {
	var body any
	switch {
	case call.JSON != nil:
		b, err := json.Marshal(call.JSON)
		if err != nil {
			return nil, 0, fmt.Errorf("vercel sandbox: encoding request: %w", err)
		}
		body = b
	case call.Body != nil:
		open := call.Body
		body = retryablehttp.ReaderFunc(func() (io.Reader, error) { return open() })
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, call.Method, c.url(call), body)
	if err != nil {
		return nil, 0, err
	}
	c.prepare(req.Request, call)
	p := &retryPolicy{ctx: ctx, call: call, conf: c.retry, log: c.log, sent: sent}
	resp, err := p.client(c.httpClient(sent)).Do(req)
	if err != nil {
		if resp != nil {
			// An answer that came as ctx ended.
			resp.Body.Close()
		}
		return nil, p.attempts, p.failure(err)
	}
	return resp, p.attempts, nil
}

// url returns the absolute URL of the call.
func (c *Client) url(call *Call) string {
	u := *c.base
	u.Path = c.base.Path + call.Path
	u.RawPath = ""
	if call.Query != nil {
		u.RawQuery = call.Query.Encode()
	}
	return u.String()
}

// prepare sets the call's headers on req; credentials and the user agent
// are set by authTransport on every attempt.
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
