package otelsandbox

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// roundTrip sends one attempt in a client span named by its method, with
// the attributes of the HTTP client conventions (url.full without its
// query, whose values the conventions ask to redact). The span ends when
// the answer's body has been read or closed, so a streamed answer (a
// command's output) is timed whole, and http.response.body.size counts
// its bytes on the wire.
func (t *telemetry) roundTrip(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	begin := time.Now()
	host, port := hostPort(req.URL)
	u := url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path, RawPath: req.URL.RawPath}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(req.Method),
		semconv.ServerAddress(host),
		semconv.URLFull(u.String()),
	}
	if port > 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	if req.ContentLength > 0 {
		attrs = append(attrs, semconv.HTTPRequestBodySize(int(req.ContentLength)))
	}
	ctx, span := t.tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	r := req.Clone(ctx)
	t.propagator().Inject(ctx, propagation.HeaderCarrier(r.Header))
	resp, err := next(r)
	mattrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(req.Method), semconv.ServerAddress(host)}
	if port > 0 {
		mattrs = append(mattrs, semconv.ServerPort(port))
	}
	if err != nil {
		typ := httpErrorType(err)
		span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		span.SetStatus(codes.Error, typ)
		span.End()
		t.httpDur.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(append(mattrs, semconv.ErrorTypeKey.String(typ))...))
		return resp, err
	}
	code := semconv.HTTPResponseStatusCode(resp.StatusCode)
	span.SetAttributes(code)
	mattrs = append(mattrs, code)
	if resp.StatusCode >= 400 {
		typ := strconv.Itoa(resp.StatusCode)
		span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		span.SetStatus(codes.Error, typ)
		mattrs = append(mattrs, semconv.ErrorTypeKey.String(typ))
	}
	t.httpDur.Record(ctx, time.Since(begin).Seconds(), metric.WithAttributes(mattrs...))
	if resp.Body == nil || resp.Body == http.NoBody {
		span.End()
		return resp, nil
	}
	resp.Body = &spanBody{ReadCloser: resp.Body, span: span}
	return resp, nil
}

// spanBody ends its span when the body is read to its end or closed.
type spanBody struct {
	io.ReadCloser
	span trace.Span
	n    atomic.Int64 // Close may come while a Read runs
	once sync.Once
}

func (b *spanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	if err != nil {
		b.end(err)
	}
	return n, err
}

func (b *spanBody) Close() error {
	err := b.ReadCloser.Close()
	b.end(nil)
	return err
}

func (b *spanBody) end(err error) {
	b.once.Do(func() {
		b.span.SetAttributes(semconv.HTTPResponseBodySize(int(b.n.Load())))
		if err != nil && !errors.Is(err, io.EOF) {
			typ := httpErrorType(err)
			b.span.SetAttributes(semconv.ErrorTypeKey.String(typ))
			b.span.SetStatus(codes.Error, typ)
		}
		b.span.End()
	})
}

// httpErrorType names a transport error by its type, never its message.
func httpErrorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "context.Canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "context.DeadlineExceeded"
	}
	return semconv.ErrorType(err).Value.AsString()
}

func hostPort(u *url.URL) (string, int) {
	host, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		host = u.Host
		switch u.Scheme {
		case "https":
			return host, 443
		case "http":
			return host, 80
		}
		return host, 0
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

// Attribute keys of a failed operation.
const (
	keyErrorCode = "vercel.sandbox.error.code"
)

// classify names err for a span and the metrics: its type (the first
// attribute, error.type, which is also the span's status description) and
// the API's status and code when it has them. Messages are left out: they
// may quote what a caller passed.
func classify(err error) (string, []attribute.KeyValue) {
	var (
		typ   string
		extra []attribute.KeyValue
	)
	var (
		ae  *sandbox.APIError
		ou  *sandbox.OutcomeUnknownError
		se  *sandbox.StreamError
		ie  *sandbox.InputError
		ol  *sandbox.OutputLostError
		de  *sandbox.DecodeError
		rtl *sandbox.ResponseTooLargeError
		rc  *sandbox.RepeatedCursorError
		iu  *sandbox.InsecureURLError
		ia  *command.InactivityError
		ee  *command.ExitError
	)
	switch {
	case errors.As(err, &ou):
		typ = "sandbox.OutcomeUnknownError"
	case errors.As(err, &ae):
		typ = "sandbox.APIError"
	case errors.As(err, &se):
		typ = "sandbox.StreamError"
		if se.Code != "" {
			extra = append(extra, attribute.String(keyErrorCode, se.Code))
		}
	case errors.As(err, &ia):
		typ = "command.InactivityError"
	case errors.As(err, &ee):
		typ = "command.ExitError"
	case errors.As(err, &ie):
		typ = "sandbox.InputError"
	case errors.As(err, &ol):
		typ = "sandbox.OutputLostError"
	case errors.As(err, &de):
		typ = "sandbox.DecodeError"
	case errors.As(err, &rtl):
		typ = "sandbox.ResponseTooLargeError"
	case errors.As(err, &rc):
		typ = "sandbox.RepeatedCursorError"
	case errors.As(err, &iu):
		typ = "sandbox.InsecureURLError"
	default:
		typ = httpErrorType(err)
	}
	if errors.As(err, &ae) {
		extra = append(extra, semconv.HTTPResponseStatusCode(ae.StatusCode))
		if ae.Code != "" {
			extra = append(extra, attribute.String(keyErrorCode, ae.Code))
		}
	}
	return typ, append([]attribute.KeyValue{semconv.ErrorTypeKey.String(typ)}, extra...)
}
