// Package otelsandbox traces and measures a sandbox client with
// OpenTelemetry. One option turns it on:
//
//	c, err := sandbox.NewClient(otelsandbox.WithTelemetry())
//
// Every create (with its retries and name lookups), get, resume, stop,
// snapshot and fork, every command (attached or detached) and every
// upload and download becomes a span, with each HTTP attempt under it as a
// child span that follows OpenTelemetry's HTTP client conventions.
// Retries, rate-limit waits, auto-resumes and re-attachments after a cut
// stream are span events. Errors are recorded by type and API code. The
// metrics are operation durations, bytes transferred, retries,
// re-attachments, sandboxes created and stopped, and commands by outcome.
//
// No telemetry carries a command's arguments, an environment value, a
// token, file contents or an error message (which may quote any of them):
// spans hold names, ids, counts, exit codes and error types.
//
// A client made without this option links no OpenTelemetry package and
// pays nothing for it.
package otelsandbox

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/version"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox"

// Option configures WithTelemetry.
type Option func(*config)

type config struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	prop      propagation.TextMapPropagator
	inSandbox bool
}

// WithTracerProvider sets the tracer provider; the default is the global
// one (otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets the meter provider; the default is the global
// one (otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithPropagator sets the propagator that puts the trace context into
// the headers of each API request; the default is the global one
// (otel.GetTextMapPropagator), read at each request.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

// WithTraceInSandbox gives every command the environment variables
// TRACEPARENT and TRACESTATE (W3C Trace Context) of its span, so that a
// program inside the sandbox that reads them continues the trace. An
// environment variable the command sets itself is replaced. PropagateTrace
// does it for one command.
func WithTraceInSandbox() Option {
	return func(c *config) { c.inSandbox = true }
}

// WithTelemetry returns the client option that traces and measures every
// call of the client with OpenTelemetry, configured by opts.
func WithTelemetry(opts ...Option) sandbox.Option {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.tp == nil {
		cfg.tp = otel.GetTracerProvider()
	}
	if cfg.mp == nil {
		cfg.mp = otel.GetMeterProvider()
	}
	return withObserver(newTelemetry(cfg))
}

// PropagateTrace gives cmd, a command of a client made WithTelemetry, the
// variables TRACEPARENT and TRACESTATE of its span when it runs, as
// WithTraceInSandbox does for every command, and returns it.
func PropagateTrace(cmd *command.Cmd) *command.Cmd {
	if cmd != nil {
		propagateCmd(cmd)
	}
	return cmd
}

var (
	withObserver = observe.WithObserver.(func(observe.Observer) sandbox.Option)
	propagateCmd = observe.PropagateCmd.(func(*command.Cmd))
)

// telemetry is the observer of one client.
type telemetry struct {
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator // nil: the global one
	inSandbox bool

	duration   metric.Float64Histogram
	httpDur    metric.Float64Histogram
	bytes      metric.Int64Counter
	retries    metric.Int64Counter
	reattaches metric.Int64Counter
	created    metric.Int64Counter
	stopped    metric.Int64Counter
	commands   metric.Int64Counter
}

func newTelemetry(cfg config) *telemetry {
	t := &telemetry{
		tracer:    cfg.tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version.Version)),
		prop:      cfg.prop,
		inSandbox: cfg.inSandbox,
	}
	m := cfg.mp.Meter(ScopeName, metric.WithInstrumentationVersion(version.Version))
	// An instrument that cannot be made is a no-op one (the API returns
	// it with the error), and the error is the global handler's.
	var err error
	report := func(e error) {
		if e != nil && err == nil {
			err = e
		}
	}
	var e error
	t.duration, e = m.Float64Histogram("vercel.sandbox.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of sandbox operations: creates, commands, transfers."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
	report(e)
	t.httpDur, e = m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10))
	report(e)
	t.bytes, e = m.Int64Counter("vercel.sandbox.io", metric.WithUnit("By"),
		metric.WithDescription("Bytes transferred: uploaded, downloaded, and command output by stream."))
	report(e)
	t.retries, e = m.Int64Counter("vercel.sandbox.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Requests sent again, after a failure or a rate-limit wait."))
	report(e)
	t.reattaches, e = m.Int64Counter("vercel.sandbox.command.reattaches", metric.WithUnit("{reattach}"),
		metric.WithDescription("Re-attachments to commands whose stream was cut."))
	report(e)
	t.created, e = m.Int64Counter("vercel.sandbox.created", metric.WithUnit("{sandbox}"),
		metric.WithDescription("Sandboxes created (forks included)."))
	report(e)
	t.stopped, e = m.Int64Counter("vercel.sandbox.stopped", metric.WithUnit("{sandbox}"),
		metric.WithDescription("Sandbox sessions stopped by this client."))
	report(e)
	t.commands, e = m.Int64Counter("vercel.sandbox.commands", metric.WithUnit("{command}"),
		metric.WithDescription("Commands by outcome: success, exit, timeout, inactivity, error; started for one started detached."))
	report(e)
	if err != nil {
		otel.Handle(err)
	}
	return t
}

func (t *telemetry) propagator() propagation.TextMapPropagator {
	if t.prop != nil {
		return t.prop
	}
	return otel.GetTextMapPropagator()
}

// Start implements observe.Observer.
func (t *telemetry) Start(ctx context.Context, name string, attrs []slog.Attr) (context.Context, observe.Span) {
	s := &span{t: t, name: name, begin: time.Now()}
	s.note(attrs)
	ctx, s.s = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(convert(attrs)...))
	s.ctx = ctx
	return ctx, s
}

// Env implements observe.Observer.
func (t *telemetry) Env(ctx context.Context, force bool) map[string]string {
	if !force && !t.inSandbox {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if carrier["traceparent"] == "" {
		return nil
	}
	env := map[string]string{"TRACEPARENT": carrier["traceparent"]}
	if ts := carrier["tracestate"]; ts != "" {
		env["TRACESTATE"] = ts
	}
	return env
}

// span is one operation.
type span struct {
	t     *telemetry
	name  string
	s     trace.Span
	ctx   context.Context
	begin time.Time

	mu         sync.Mutex
	reattaches int
	outcome    string
	stdout     int64
	stderr     int64
	bytes      int64
	already    bool
	ended      bool
}

// note keeps the attributes that the metrics need.
func (s *span) note(attrs []slog.Attr) {
	for _, a := range attrs {
		switch a.Key {
		case observe.KeyOutcome:
			s.outcome = a.Value.String()
		case observe.KeyStdoutBytes:
			s.stdout = a.Value.Int64()
		case observe.KeyStderrBytes:
			s.stderr = a.Value.Int64()
		case observe.KeyBytes:
			s.bytes = a.Value.Int64()
		case observe.KeyAlready:
			s.already = a.Value.Bool()
		}
	}
}

func (s *span) Set(attrs []slog.Attr) {
	s.mu.Lock()
	s.note(attrs)
	s.mu.Unlock()
	s.s.SetAttributes(convert(attrs)...)
}

func (s *span) Event(name string, attrs []slog.Attr) {
	op := attribute.String("vercel.sandbox.operation", s.name)
	switch name {
	case observe.EventReattach:
		s.mu.Lock()
		s.reattaches++
		s.mu.Unlock()
		s.t.reattaches.Add(s.ctx, 1, metric.WithAttributes(op))
	case observe.EventRetry, observe.EventRateLimit:
		s.t.retries.Add(s.ctx, 1, metric.WithAttributes(op, attribute.String("vercel.sandbox.retry.reason", name)))
	}
	s.s.AddEvent(name, trace.WithAttributes(convert(attrs)...))
}

func (s *span) End(err error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	reattaches, outcome, stdout, stderr, bytes, already := s.reattaches, s.outcome, s.stdout, s.stderr, s.bytes, s.already
	s.mu.Unlock()

	ctx := s.ctx
	op := attribute.String("vercel.sandbox.operation", s.name)
	mattrs := []attribute.KeyValue{op}
	command := s.name == observe.OpRun || s.name == observe.OpWait || s.name == observe.OpStart
	if s.name == observe.OpRun || s.name == observe.OpWait {
		s.s.SetAttributes(attribute.Int(observe.KeyReattaches, reattaches))
	}
	if err != nil {
		typ, extra := classify(err)
		s.s.SetAttributes(extra...)
		s.s.SetStatus(codes.Error, typ)
		mattrs = append(mattrs, extra[0])
	}
	s.t.duration.Record(ctx, time.Since(s.begin).Seconds(), metric.WithAttributes(mattrs...))
	if command && outcome != "" {
		s.t.commands.Add(ctx, 1, metric.WithAttributes(attribute.String(observe.KeyOutcome, outcome)))
	}
	dir := func(d string) metric.AddOption {
		return metric.WithAttributes(attribute.String("vercel.sandbox.io.direction", d))
	}
	if stdout > 0 {
		s.t.bytes.Add(ctx, stdout, dir("stdout"))
	}
	if stderr > 0 {
		s.t.bytes.Add(ctx, stderr, dir("stderr"))
	}
	if err == nil {
		switch s.name {
		case observe.OpCreate, observe.OpFork:
			s.t.created.Add(ctx, 1)
		case observe.OpStop:
			if !already {
				s.t.stopped.Add(ctx, 1)
			}
		}
	}
	if bytes > 0 {
		switch s.name {
		case observe.OpUpload:
			if err == nil {
				s.t.bytes.Add(ctx, bytes, dir("upload"))
			}
		case observe.OpDownload:
			s.t.bytes.Add(ctx, bytes, dir("download"))
		}
	}
	s.s.End()
}

// convert turns the hook's attributes into OpenTelemetry's.
func convert(attrs []slog.Attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		v := a.Value.Resolve()
		switch v.Kind() {
		case slog.KindString:
			out = append(out, attribute.String(a.Key, v.String()))
		case slog.KindInt64:
			out = append(out, attribute.Int64(a.Key, v.Int64()))
		case slog.KindUint64:
			out = append(out, attribute.Int64(a.Key, int64(v.Uint64())))
		case slog.KindBool:
			out = append(out, attribute.Bool(a.Key, v.Bool()))
		case slog.KindFloat64:
			out = append(out, attribute.Float64(a.Key, v.Float64()))
		case slog.KindDuration:
			out = append(out, attribute.Float64(a.Key, v.Duration().Seconds()))
		default:
			out = append(out, attribute.String(a.Key, v.String()))
		}
	}
	return out
}

// RoundTrip implements observe.Observer: one HTTP attempt as a client
// span, after OpenTelemetry's HTTP client conventions.
func (t *telemetry) RoundTrip(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return t.roundTrip(req, next)
}

var _ observe.Observer = (*telemetry)(nil)
