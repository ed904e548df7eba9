package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// receiver is an OTLP/HTTP endpoint that decodes what it is sent.
type receiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []string
	bad     []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		rc.bad = append(rc.bad, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			rc.bad = append(rc.bad, "traces: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			rc.bad = append(rc.bad, "metrics: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					rc.metrics = append(rc.metrics, m.Name)
				}
			}
		}
		b, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	default:
		rc.bad = append(rc.bad, "path "+r.URL.Path)
		http.NotFound(w, r)
	}
}

func TestTelemetryExportsOverOTLP(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, &out, &errOut, true), errOut.String())
	assert.Empty(t, out.String(), "nothing printed when exporting over OTLP")

	rc.mu.Lock()
	defer rc.mu.Unlock()
	assert.Empty(t, rc.bad)
	byName := map[string][]*tracepb.Span{}
	for _, s := range rc.spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	for _, name := range []string{"agent-task", "sandbox.create", "sandbox.files.upload", "sandbox.command.run",
		"sandbox.files.download", "sandbox.stop", "POST"} {
		assert.NotEmpty(t, byName[name], "span %s; got %v", name, names(rc.spans))
	}
	require.Len(t, byName["agent-task"], 1)
	task := byName["agent-task"][0]
	for _, s := range rc.spans {
		assert.Equal(t, task.TraceId, s.TraceId, "span %s is of the task's trace", s.Name)
	}
	for _, name := range []string{"sandbox.create", "sandbox.command.run", "sandbox.stop"} {
		assert.Equal(t, task.SpanId, byName[name][0].ParentSpanId, "%s is a child of the task", name)
	}
	// The command saw its own span's context.
	run := byName["sandbox.command.run"][0]
	assert.Contains(t, errOut.String(), "continuing trace 00-"+hex.EncodeToString(run.TraceId)+"-"+hex.EncodeToString(run.SpanId)+"-01")
	assert.Contains(t, errOut.String(), "output.txt: 25\n")
	for _, m := range []string{"vercel.sandbox.operation.duration", "vercel.sandbox.created", "vercel.sandbox.commands", "http.client.request.duration"} {
		assert.Contains(t, rc.metrics, m)
	}
}

func TestTelemetryPrintsToStdoutByDefault(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, &out, &errOut, true), errOut.String())
	s := out.String()
	for _, want := range []string{`"Name": "agent-task"`, `"Name": "sandbox.create"`, `"Name": "sandbox.command.run"`, `"vercel.sandbox.operation.duration"`} {
		assert.Contains(t, s, want)
	}
}

func names(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
