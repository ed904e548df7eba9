package otelsandbox

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/sbx-go/vercel-sandbox/internal/observe"
)

// BenchmarkObservedRun is what telemetry adds to an attached run, without
// the server: the command's span with its attributes and metrics, and one
// HTTP attempt's span over a transport that answers at once.
func BenchmarkObservedRun(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	req, _ := http.NewRequest("POST", "http://127.0.0.1:3000/v2/sandboxes/sessions/sbx_1/cmd?teamId=team_x", nil)
	next := func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}\n"))}, nil
	}
	for _, v := range []struct {
		name string
		obs  observe.Observer
	}{
		{"off", nil},
		{"noop", newTelemetry(config{tp: tracenoop.NewTracerProvider(), mp: metricnoop.NewMeterProvider()})},
		{"sdk", newTelemetry(config{tp: tp, mp: mp})},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				octx, op := observe.Start(ctx, v.obs, observe.OpRun, slog.String(observe.KeySandbox, "sbx"))
				if v.obs != nil {
					resp, err := v.obs.RoundTrip(req.WithContext(octx), next)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				op.Set(slog.String(observe.KeySession, "sbx_1"), slog.String(observe.KeyCommand, "cmd_1"),
					slog.Int64(observe.KeyStdoutBytes, 0), slog.Int64(observe.KeyStderrBytes, 0),
					slog.Int(observe.KeyExitCode, 0), slog.String(observe.KeyOutcome, observe.OutcomeSuccess))
				op.End(nil)
			}
		})
	}
}
