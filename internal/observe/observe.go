// Package observe is the neutral hook through which the client reports
// what it does: its operations (a create, a command, an upload), their
// events (a retry, a re-attachment, a resume) and each HTTP attempt under
// them. Package sandbox/otelsandbox implements it with OpenTelemetry. It
// imports only the standard library, so that a program with no observer
// links no telemetry package, and when no observer is set every function
// here returns at once without allocating.
//
// No attribute or event may carry a command's arguments, an environment
// value, a token or file contents: only names, ids, counts and codes.
package observe

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
)

// Observer receives the client's operations. Its methods must be safe for
// concurrent use.
type Observer interface {
	// Start begins the operation name and returns the context that
	// carries it to its events, its HTTP attempts and the operations
	// nested in it. attrs is the observer's to keep.
	Start(ctx context.Context, name string, attrs []slog.Attr) (context.Context, Span)
	// RoundTrip sends one HTTP attempt through next, observed. The
	// request's context is the one of the call's operation.
	RoundTrip(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error)
	// Env returns the environment variables (TRACEPARENT, TRACESTATE)
	// that continue ctx's operation inside a command, or nil when
	// commands do not get them. force asks for them whatever the
	// observer's default.
	Env(ctx context.Context, force bool) map[string]string
}

// Span is one operation of an Observer.
type Span interface {
	// Event records something that happened during the operation.
	Event(name string, attrs []slog.Attr)
	// Set adds attributes to the operation.
	Set(attrs []slog.Attr)
	// End ends the operation, failed when err is not nil.
	End(err error)
}

// Operation names.
const (
	OpCreate       = "sandbox.create"
	OpGet          = "sandbox.get"
	OpResume       = "sandbox.resume"
	OpStop         = "sandbox.stop"
	OpSnapshot     = "sandbox.snapshot"
	OpFork         = "sandbox.fork"
	OpRun          = "sandbox.command.run"   // an attached command
	OpStart        = "sandbox.command.start" // a detached command being started
	OpWait         = "sandbox.command.wait"  // waiting for a detached command
	OpUpload       = "sandbox.files.upload"
	OpDownload     = "sandbox.files.download"
	EventRetry     = "retry"
	EventRateLimit = "rate_limit_wait"
	EventResume    = "auto_resume"
	EventReattach  = "reattach"
)

// Attribute keys.
const (
	KeySandbox     = "vercel.sandbox.name"
	KeySession     = "vercel.sandbox.session.id"
	KeyCommand     = "vercel.sandbox.command.id"
	KeyExitCode    = "process.exit.code"
	KeyStdoutBytes = "vercel.sandbox.command.stdout.bytes"
	KeyStderrBytes = "vercel.sandbox.command.stderr.bytes"
	KeyReattaches  = "vercel.sandbox.command.reattaches"
	KeyEndedBy     = "vercel.sandbox.command.ended_by" // "timeout" or "inactivity"
	KeyOutcome     = "vercel.sandbox.command.outcome"  // see the Outcome values
	KeyFiles       = "vercel.sandbox.files.count"
	KeyBytes       = "vercel.sandbox.files.bytes"      // bytes of file content
	KeyWireBytes   = "vercel.sandbox.files.wire_bytes" // bytes sent or received
	KeyAlready     = "vercel.sandbox.already_stopped"
	KeyResumed     = "vercel.sandbox.resumed"
	KeyAttempt     = "vercel.sandbox.retry.attempt"
	KeyStatus      = "http.response.status_code"
	KeyWait        = "vercel.sandbox.retry.wait_ms"
	KeyOp          = "vercel.sandbox.reattach.op"
	KeyDelivered   = "vercel.sandbox.reattach.delivered_bytes"
	KeyOldSession  = "vercel.sandbox.resume.old_session.id"
)

// Command outcomes, the values of KeyOutcome.
const (
	OutcomeSuccess    = "success"    // exit code 0
	OutcomeExit       = "exit"       // another exit code
	OutcomeTimeout    = "timeout"    // killed by its Cmd.Timeout
	OutcomeInactivity = "inactivity" // ended by InactivityTimeout
	OutcomeStarted    = "started"    // started detached
	OutcomeError      = "error"      // no exit code
)

type key struct{}

type active struct {
	obs  Observer
	span Span
}

// Op is an operation begun with Start. A nil *Op, what Start returns
// without an observer, does nothing.
type Op struct {
	span Span
}

// Start begins the operation name with obs, when obs is not nil, and
// returns the context that carries it.
func Start(ctx context.Context, obs Observer, name string, attrs ...slog.Attr) (context.Context, *Op) {
	if obs == nil {
		return ctx, nil
	}
	ctx, span := obs.Start(ctx, name, slices.Clone(attrs))
	return context.WithValue(ctx, key{}, active{obs: obs, span: span}), &Op{span: span}
}

// Set adds attributes to o.
func (o *Op) Set(attrs ...slog.Attr) {
	if o == nil {
		return
	}
	o.span.Set(slices.Clone(attrs))
}

// Event records an event on o.
func (o *Op) Event(name string, attrs ...slog.Attr) {
	if o == nil {
		return
	}
	o.span.Event(name, slices.Clone(attrs))
}

// End ends o, failed when err is not nil.
func (o *Op) End(err error) {
	if o == nil {
		return
	}
	o.span.End(err)
}

// Event records an event on the operation ctx carries, if any.
func Event(ctx context.Context, name string, attrs ...slog.Attr) {
	a, ok := ctx.Value(key{}).(active)
	if !ok {
		return
	}
	a.span.Event(name, slices.Clone(attrs))
}

// Set adds attributes to the operation ctx carries, if any.
func Set(ctx context.Context, attrs ...slog.Attr) {
	a, ok := ctx.Value(key{}).(active)
	if !ok {
		return
	}
	a.span.Set(slices.Clone(attrs))
}

// Env returns the variables that continue the operation ctx carries
// inside a command (see Observer.Env), or nil.
func Env(ctx context.Context, force bool) map[string]string {
	a, ok := ctx.Value(key{}).(active)
	if !ok {
		return nil
	}
	return a.obs.Env(ctx, force)
}

// Middleware returns the function that sends each HTTP attempt through
// obs, or nil without an observer.
func Middleware(obs Observer) func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if obs == nil {
		return nil
	}
	return obs.RoundTrip
}

// Hooks that package sandbox sets when it is initialised, so that
// package otelsandbox can configure a client without package sandbox
// exporting the Observer; their types name sandbox's types, which this
// package cannot import: the caller asserts them.
var (
	// WithObserver returns a sandbox.Option that sets obs. Its type is
	//
	//	func(obs Observer) sandbox.Option
	WithObserver any
	// PropagateCmd marks a command so that it gets the variables of
	// Observer.Env whatever the observer's default. Its type is
	//
	//	func(cmd *command.Cmd)
	PropagateCmd any
)
