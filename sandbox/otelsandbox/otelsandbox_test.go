package otelsandbox_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a local server, a client with telemetry into in-memory
// exporters, and what they recorded.
type env struct {
	t      *testing.T
	srv    *sandboxtest.Server
	script *sandboxtest.Script
	c      *sandbox.Client
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

// fastRetries keeps the retry tests short.
var fastRetries = sandbox.WithRetryPolicy(sandbox.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})

func newEnv(t *testing.T, opts []otelsandbox.Option, copts ...sandbox.Option) *env {
	t.Helper()
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	script.Handle(sandboxtest.MatchName("env"), sandboxtest.EnvHandler())
	srv := sandboxtest.NewServer(t, local.WithExecutor(script))
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	all := append([]otelsandbox.Option{otelsandbox.WithTracerProvider(tp), otelsandbox.WithMeterProvider(mp)}, opts...)
	c := srv.Client(append([]sandbox.Option{otelsandbox.WithTelemetry(all...)}, copts...)...)
	return &env{t: t, srv: srv, script: script, c: c, spans: exp, reader: reader}
}

// named returns the ended spans called name.
func (e *env) named(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range e.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// children returns the ended spans whose parent is s.
func (e *env) children(s tracetest.SpanStub) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, c := range e.spans.GetSpans() {
		if c.Parent.SpanID() == s.SpanContext.SpanID() && c.Parent.TraceID() == s.SpanContext.TraceID() {
			out = append(out, c)
		}
	}
	return out
}

// one returns the only ended span called name.
func (e *env) one(name string) tracetest.SpanStub {
	e.t.Helper()
	s := e.named(name)
	require.Len(e.t, s, 1, "spans called %s", name)
	return s[0]
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrOf(t *testing.T, s tracetest.SpanStub, key string) attribute.Value {
	t.Helper()
	v, ok := attr(s, key)
	require.True(t, ok, "span %s has no attribute %s: %v", s.Name, key, s.Attributes)
	return v
}

func events(s tracetest.SpanStub, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, ev := range s.Events {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// metrics collects the metrics recorded so far.
func (e *env) metrics() metricdata.ResourceMetrics {
	e.t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(e.t, e.reader.Collect(context.Background(), &rm))
	return rm
}

// sum adds up the points of the counter name whose attributes include
// want.
func (e *env) sum(name string, want ...attribute.KeyValue) int64 {
	var n int64
	for _, sm := range e.metrics().ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				match := true
				for _, w := range want {
					v, ok := p.Attributes.Value(w.Key)
					match = match && ok && v == w.Value
				}
				if match {
					n += p.Value
				}
			}
		}
	}
	return n
}

// histCount counts the observations of the histogram name whose
// attributes include want.
func (e *env) histCount(name string, want ...attribute.KeyValue) uint64 {
	var n uint64
	for _, sm := range e.metrics().ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				match := true
				for _, w := range want {
					v, ok := p.Attributes.Value(w.Key)
					match = match && ok && v == w.Value
				}
				if match {
					n += p.Count
				}
			}
		}
	}
	return n
}

func op(name string) attribute.KeyValue { return attribute.String("vercel.sandbox.operation", name) }

func TestCreateSpan(t *testing.T) {
	e := newEnv(t, nil)
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "traced"})
	require.NoError(t, err)

	s := e.one("sandbox.create")
	assert.False(t, s.Parent.IsValid(), "a create is a root span when the caller has none")
	assert.Equal(t, trace.SpanKindInternal, s.SpanKind)
	assert.Equal(t, codes.Unset, s.Status.Code)
	assert.Equal(t, "traced", attrOf(t, s, "vercel.sandbox.name").AsString())
	assert.Equal(t, sb.SessionID(), attrOf(t, s, "vercel.sandbox.session.id").AsString())

	kids := e.children(s)
	require.Len(t, kids, 1, "one HTTP attempt")
	h := kids[0]
	assert.Equal(t, "POST", h.Name)
	assert.Equal(t, trace.SpanKindClient, h.SpanKind)
	assert.Equal(t, "POST", attrOf(t, h, "http.request.method").AsString())
	assert.Equal(t, int64(200), attrOf(t, h, "http.response.status_code").AsInt64())
	assert.Equal(t, "127.0.0.1", attrOf(t, h, "server.address").AsString())
	assert.Positive(t, attrOf(t, h, "server.port").AsInt64())
	u := attrOf(t, h, "url.full").AsString()
	assert.True(t, strings.HasSuffix(u, "/v3/sandboxes"), "url.full %q", u)
	assert.NotContains(t, u, "?", "no query in url.full")

	assert.Equal(t, int64(1), e.sum("vercel.sandbox.created"))
	assert.Equal(t, uint64(1), e.histCount("vercel.sandbox.operation.duration", op("sandbox.create")))
	assert.Positive(t, e.histCount("http.client.request.duration"))

	// Stop, a snapshot-free lifecycle: its own span, and one sandbox stopped.
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
	st := e.one("sandbox.stop")
	assert.Equal(t, "traced", attrOf(t, st, "vercel.sandbox.name").AsString())
	assert.False(t, attrOf(t, st, "vercel.sandbox.already_stopped").AsBool())
	assert.Equal(t, int64(1), e.sum("vercel.sandbox.stopped"))

	// A command after the stop resumes the sandbox: an auto-resume event
	// on the command's span, and a resume span under it.
	_, err = sb.Command("echo", "hi").Output(t.Context())
	require.NoError(t, err)
	run := e.one("sandbox.command.run")
	assert.Len(t, events(run, "auto_resume"), 1, "events %v", run.Events)
	res := e.one("sandbox.resume")
	assert.Equal(t, run.SpanContext.SpanID(), res.Parent.SpanID())
	assert.True(t, attrOf(t, res, "vercel.sandbox.resumed").AsBool())
}

func TestFailedCreateWithRetries(t *testing.T) {
	e := newEnv(t, nil, fastRetries)
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v3/sandboxes", Status: 429, RetryAfter: time.Millisecond, Times: 1})
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v3/sandboxes", Status: 503})

	_, err := e.c.Create(t.Context(), sandbox.CreateParams{Name: "doomed"})
	require.Error(t, err)

	s := e.one("sandbox.create")
	assert.Equal(t, codes.Error, s.Status.Code)
	assert.Equal(t, "sandbox.OutcomeUnknownError", s.Status.Description)
	assert.Equal(t, "sandbox.OutcomeUnknownError", attrOf(t, s, "error.type").AsString())
	assert.Equal(t, int64(503), attrOf(t, s, "http.response.status_code").AsInt64())
	assert.NotEmpty(t, attrOf(t, s, "vercel.sandbox.error.code").AsString(), "the API's error code")
	assert.Len(t, events(s, "rate_limit_wait"), 1, "events %v", s.Events)
	assert.Len(t, events(s, "retry"), 2, "events %v", s.Events)
	for _, ev := range s.Events {
		assert.Contains(t, []string{"retry", "rate_limit_wait"}, ev.Name)
	}

	// Under it: the HTTP attempts of the create (429, 503, then 503 twice
	// after the lookups) and the name lookups, each a get span with its
	// own HTTP attempt.
	var posts, gets []int64
	for _, k := range e.children(s) {
		switch k.Name {
		case "POST":
			posts = append(posts, attrOf(t, k, "http.response.status_code").AsInt64())
		case "sandbox.get":
			assert.Equal(t, codes.Error, k.Status.Code)
			assert.Equal(t, int64(404), attrOf(t, k, "http.response.status_code").AsInt64())
			h := e.children(k)
			require.Len(t, h, 1)
			gets = append(gets, attrOf(t, h[0], "http.response.status_code").AsInt64())
		default:
			t.Errorf("unexpected child span %s", k.Name)
		}
	}
	assert.Equal(t, []int64{429, 503, 503, 503}, posts)
	assert.Equal(t, []int64{404, 404, 404}, gets, "two lookups before re-sending, one after the last attempt")

	assert.Equal(t, int64(3), e.sum("vercel.sandbox.retries", op("sandbox.create")))
	assert.Equal(t, int64(1), e.sum("vercel.sandbox.retries", attribute.String("vercel.sandbox.retry.reason", "rate_limit_wait")))
	assert.Zero(t, e.sum("vercel.sandbox.created"))
	assert.Equal(t, uint64(1), e.histCount("vercel.sandbox.operation.duration", op("sandbox.create"),
		attribute.String("error.type", "sandbox.OutcomeUnknownError")))
}

func TestAttachedRunThroughCutStream(t *testing.T) {
	e := newEnv(t, nil)
	var want strings.Builder
	steps := sandboxtest.Steps{}
	for i := range 6 {
		line := strings.Repeat(string(rune('a'+i)), 10) + "\n"
		want.WriteString(line)
		steps = steps.Stdout(line)
	}
	e.script.Handle(sandboxtest.MatchName("job"), steps.Stderr("warn\n").Exit(3))
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	// The attached stream ends cleanly after its command line and two
	// output lines: the command is followed through its logs.
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Cut: true, AfterFrames: 3, Times: 1})

	var out bytes.Buffer
	cmd := sb.Command("job")
	cmd.Stdout = &out
	res, err := cmd.Run(t.Context())
	var ee interface{ ExitCode() int }
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, res.ExitCode())
	assert.Equal(t, want.String(), out.String(), "every byte once")

	s := e.one("sandbox.command.run")
	assert.Equal(t, codes.Unset, s.Status.Code, "an exit code is not a failed call")
	assert.Equal(t, sb.Name(), attrOf(t, s, "vercel.sandbox.name").AsString())
	assert.Equal(t, sb.SessionID(), attrOf(t, s, "vercel.sandbox.session.id").AsString())
	assert.Equal(t, res.CommandID, attrOf(t, s, "vercel.sandbox.command.id").AsString())
	assert.Equal(t, int64(3), attrOf(t, s, "process.exit.code").AsInt64())
	assert.Equal(t, "exit", attrOf(t, s, "vercel.sandbox.command.outcome").AsString())
	assert.Equal(t, int64(want.Len()), attrOf(t, s, "vercel.sandbox.command.stdout.bytes").AsInt64())
	assert.Equal(t, int64(len("warn\n")), attrOf(t, s, "vercel.sandbox.command.stderr.bytes").AsInt64())
	re := events(s, "reattach")
	require.NotEmpty(t, re, "events %v", s.Events)
	assert.Equal(t, int64(len(re)), attrOf(t, s, "vercel.sandbox.command.reattaches").AsInt64())
	_, ended := attr(s, "vercel.sandbox.command.ended_by")
	assert.False(t, ended)

	// The cut POST and the logs that followed it are its HTTP attempts.
	var names []string
	for _, k := range e.children(s) {
		names = append(names, k.Name)
		assert.Equal(t, trace.SpanKindClient, k.SpanKind)
	}
	assert.Equal(t, "POST", names[0])
	assert.Contains(t, names, "GET")

	assert.Equal(t, int64(1), e.sum("vercel.sandbox.commands", attribute.String("vercel.sandbox.command.outcome", "exit")))
	assert.Equal(t, int64(len(re)), e.sum("vercel.sandbox.command.reattaches"))
	assert.Equal(t, int64(want.Len()), e.sum("vercel.sandbox.io", attribute.String("vercel.sandbox.io.direction", "stdout")))
}

func TestUploadAndDownloadSpans(t *testing.T) {
	e := newEnv(t, nil)
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	a, b := bytes.Repeat([]byte("x"), 1000), bytes.Repeat([]byte("y"), 234)
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("a.txt", a), files.FromBytes("d/b.txt", b)}, files.WriteParams{}))

	s := e.one("sandbox.files.upload")
	assert.Equal(t, codes.Unset, s.Status.Code)
	assert.Equal(t, int64(2), attrOf(t, s, "vercel.sandbox.files.count").AsInt64())
	assert.Equal(t, int64(1234), attrOf(t, s, "vercel.sandbox.files.bytes").AsInt64())
	wire := attrOf(t, s, "vercel.sandbox.files.wire_bytes").AsInt64()
	assert.Positive(t, wire)
	assert.Less(t, wire, int64(1234), "the archive is compressed")
	kids := e.children(s)
	require.Len(t, kids, 1)
	assert.Equal(t, "POST", kids[0].Name)
	assert.True(t, strings.HasSuffix(attrOf(t, kids[0], "url.full").AsString(), "/fs/write"))
	assert.Equal(t, int64(200), attrOf(t, kids[0], "http.response.status_code").AsInt64())
	assert.Equal(t, int64(1234), e.sum("vercel.sandbox.io", attribute.String("vercel.sandbox.io.direction", "upload")))

	got, err := sb.FS().ReadFile(t.Context(), "a.txt")
	require.NoError(t, err)
	require.Equal(t, a, got)
	d := e.one("sandbox.files.download")
	assert.Equal(t, int64(1000), attrOf(t, d, "vercel.sandbox.files.bytes").AsInt64())
	kids = e.children(d)
	require.Len(t, kids, 1)
	assert.Equal(t, int64(1000), attrOf(t, kids[0], "http.response.body.size").AsInt64())
	assert.Equal(t, int64(1000), e.sum("vercel.sandbox.io", attribute.String("vercel.sandbox.io.direction", "download")))
}

func TestTraceContinuesInsideTheSandbox(t *testing.T) {
	traceparent := func(t *testing.T, e *env, run string) (string, tracetest.SpanStub) {
		t.Helper()
		var s tracetest.SpanStub
		for _, sp := range e.named("sandbox.command.run") {
			if id, _ := attr(sp, "vercel.sandbox.command.id"); id.AsString() == run {
				s = sp
			}
		}
		require.True(t, s.SpanContext.IsValid())
		calls := e.script.Calls()
		return calls[len(calls)-1].Env["TRACEPARENT"], s
	}
	want := func(s tracetest.SpanStub) string {
		return "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
	}

	t.Run("client", func(t *testing.T) {
		e := newEnv(t, []otelsandbox.Option{otelsandbox.WithTraceInSandbox()})
		sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
		require.NoError(t, err)
		cmd := sb.Command("env")
		cmd.Env = map[string]string{"KEEP": "1"}
		res, err := cmd.Run(t.Context())
		require.NoError(t, err)
		tp, s := traceparent(t, e, res.CommandID)
		assert.Equal(t, want(s), tp, "the command's own span")
		assert.Contains(t, string(res.Stdout), "KEEP=1\n")
		assert.Equal(t, map[string]string{"KEEP": "1"}, cmd.Env, "the caller's map is left alone")
	})
	t.Run("command", func(t *testing.T) {
		e := newEnv(t, nil)
		sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
		require.NoError(t, err)
		res, err := sb.Command("env").Run(t.Context())
		require.NoError(t, err)
		tp, _ := traceparent(t, e, res.CommandID)
		assert.Empty(t, tp, "off by default")

		res, err = otelsandbox.PropagateTrace(sb.Command("env")).Run(t.Context())
		require.NoError(t, err)
		tp, s := traceparent(t, e, res.CommandID)
		assert.Equal(t, want(s), tp)
	})
}

func TestDetachedCommandSpans(t *testing.T) {
	e := newEnv(t, nil)
	e.script.Handle(sandboxtest.MatchName("slow"), sandboxtest.Steps{}.Sleep(20*time.Millisecond).Exit(0))
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	h, err := sb.Command("slow").Start(t.Context())
	require.NoError(t, err)
	_, err = h.Wait(t.Context())
	require.NoError(t, err)

	st := e.one("sandbox.command.start")
	assert.Equal(t, h.ID(), attrOf(t, st, "vercel.sandbox.command.id").AsString())
	assert.Equal(t, "started", attrOf(t, st, "vercel.sandbox.command.outcome").AsString())
	w := e.one("sandbox.command.wait")
	assert.Equal(t, h.ID(), attrOf(t, w, "vercel.sandbox.command.id").AsString())
	assert.Equal(t, int64(0), attrOf(t, w, "process.exit.code").AsInt64())
	assert.Equal(t, "success", attrOf(t, w, "vercel.sandbox.command.outcome").AsString())
	assert.Equal(t, int64(1), e.sum("vercel.sandbox.commands", attribute.String("vercel.sandbox.command.outcome", "started")))
	assert.Equal(t, int64(1), e.sum("vercel.sandbox.commands", attribute.String("vercel.sandbox.command.outcome", "success")))
}

func TestInactivityIsRecorded(t *testing.T) {
	e := newEnv(t, nil)
	e.script.Handle(sandboxtest.MatchName("quiet"), sandboxtest.Steps{}.Stdout("x\n").Block())
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	cmd := sb.Command("quiet")
	cmd.InactivityTimeout = 100 * time.Millisecond
	_, err = cmd.Run(t.Context())
	require.Error(t, err)
	s := e.one("sandbox.command.run")
	assert.Equal(t, "inactivity", attrOf(t, s, "vercel.sandbox.command.ended_by").AsString())
	assert.Equal(t, "command.InactivityError", s.Status.Description)
	assert.Equal(t, int64(1), e.sum("vercel.sandbox.commands", attribute.String("vercel.sandbox.command.outcome", "inactivity")))
}

// No span, event or metric carries a command's arguments, an environment
// value, the token, file contents or a file path, even in errors that
// quote them.
func TestNoSecretInTelemetry(t *testing.T) {
	const secret = "canary-7f3a9c"
	var token string
	e := newEnv(t, []otelsandbox.Option{otelsandbox.WithTraceInSandbox()}, fastRetries)
	token = e.srv.Token()
	require.NotEmpty(t, token)
	ctx := t.Context()

	sb, err := e.c.Create(ctx, sandbox.CreateParams{Env: map[string]string{"SANDBOX_SECRET": secret}})
	require.NoError(t, err)
	cmd := sb.Command("echo", "--password="+secret)
	cmd.Env = map[string]string{"API_KEY": secret}
	out, err := cmd.Output(ctx)
	require.NoError(t, err)
	require.Contains(t, string(out), secret)
	// An unknown command, named with the secret.
	_, _ = sb.Command(secret, secret).Run(ctx)
	// Detached, with the secret in its arguments.
	if h, err := sb.Command("echo", secret).Start(ctx); assert.NoError(t, err) {
		_, _ = h.Output(ctx)
		_, _ = h.Wait(ctx)
	}
	require.NoError(t, sb.FS().WriteFile(ctx, "notes/"+secret+".txt", []byte("content "+secret), 0o644))
	got, err := sb.FS().ReadFile(ctx, "notes/"+secret+".txt")
	require.NoError(t, err)
	require.Contains(t, string(got), secret)
	_, err = sb.FS().ReadFile(ctx, "missing/"+secret)
	require.Error(t, err)
	_, err = sb.FS().DownloadFile(ctx, "missing/"+secret, t.TempDir()+"/x", sandbox.DownloadParams{})
	require.Error(t, err)
	// Refused input that quotes the secret, and API errors.
	_, err = e.c.Create(ctx, sandbox.CreateParams{Name: "bad name " + secret})
	require.Error(t, err)
	_, err = e.c.Get(ctx, "missing-sandbox") // names and ids are recorded: they are no secret
	require.Error(t, err)
	e.srv.Inject(fault.Fault{Method: "POST", Path: "/v3/sandboxes", Status: 500, Message: secret})
	_, err = e.c.Create(ctx, sandbox.CreateParams{})
	require.Error(t, err)
	require.Contains(t, err.Error(), secret, "the error itself does quote it")
	_, err = sb.Stop(ctx)
	require.NoError(t, err)

	spans := e.spans.GetSpans()
	require.Greater(t, len(spans), 20)
	forbidden := []string{secret, token, strings.ReplaceAll(secret, "-", "")}
	check := func(where, s string) {
		for _, f := range forbidden {
			if strings.Contains(s, f) {
				t.Errorf("%s carries a secret: %q", where, s)
			}
		}
	}
	kvs := func(where string, attrs []attribute.KeyValue) {
		for _, a := range attrs {
			check(where+" attribute "+string(a.Key), a.Value.String())
		}
	}
	for _, s := range spans {
		check("span name", s.Name)
		check("span "+s.Name+" status", s.Status.Description)
		kvs("span "+s.Name, s.Attributes)
		for _, ev := range s.Events {
			check("event name", ev.Name)
			kvs("span "+s.Name+" event "+ev.Name, ev.Attributes)
		}
		for _, l := range s.Links {
			kvs("link", l.Attributes)
		}
		check("span "+s.Name+" trace state", s.SpanContext.TraceState().String())
	}
	for _, sm := range e.metrics().ScopeMetrics {
		for _, m := range sm.Metrics {
			check("metric name", m.Name)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					kvs("metric "+m.Name, p.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					kvs("metric "+m.Name, p.Attributes.ToSlice())
				}
			default:
				t.Errorf("metric %s of an unchecked type %T", m.Name, m.Data)
			}
		}
	}
}

// Every span ends, even of a call cut short by its context.
func TestSpansEndWhenContextEnds(t *testing.T) {
	e := newEnv(t, nil)
	e.script.Handle(sandboxtest.MatchName("forever"), sandboxtest.Steps{}.Block())
	sb, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = sb.Command("forever").Run(ctx)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	s := e.one("sandbox.command.run")
	assert.Equal(t, "context.DeadlineExceeded", s.Status.Description)
	assert.Equal(t, "error", attrOf(t, s, "vercel.sandbox.command.outcome").AsString())
	for _, k := range e.children(s) {
		assert.False(t, k.EndTime.IsZero())
	}
}

// Each API request carries the trace context of its HTTP span, through the
// propagator given (the global one by default, which propagates nothing
// until a program sets one).
func TestRequestsCarryTheTraceContext(t *testing.T) {
	e := newEnv(t, []otelsandbox.Option{otelsandbox.WithPropagator(propagation.TraceContext{})})
	_, err := e.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	h := e.one("POST")
	reqs := e.srv.Requests()
	require.NotEmpty(t, reqs)
	last := reqs[len(reqs)-1]
	assert.Equal(t, "00-"+h.SpanContext.TraceID().String()+"-"+h.SpanContext.SpanID().String()+"-01", last.Header.Get("Traceparent"))

	plain := newEnv(t, nil)
	_, err = plain.c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	for _, r := range plain.srv.Requests() {
		assert.Empty(t, r.Header.Get("Traceparent"), "the global propagator is a no-op until set")
	}
}
