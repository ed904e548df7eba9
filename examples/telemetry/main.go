// Command telemetry traces and measures an agent's task with
// OpenTelemetry: one span for the task, and under it the spans of the
// sandbox client (create, upload, the command, the download, stop) and of
// every HTTP call they made. The command continues the trace inside the
// sandbox: it gets TRACEPARENT, which it prints.
//
// By default the spans and metrics are printed on standard output. With
// OTEL_EXPORTER_OTLP_ENDPOINT set (for example http://localhost:4318, a
// local OpenTelemetry Collector or Jaeger) they are sent there over
// OTLP/HTTP instead; the exporters read the other standard OTEL_EXPORTER_OTLP_*
// variables (headers, protocol details, per-signal endpoints) too.
//
// With Vercel credentials in the environment it uses Vercel; without them
// the embedded local server, which needs none.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox"
)

func main() {
	log.SetFlags(0)
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 5*time.Minute)
	defer cancel()
	local := backend.LocalFlag()
	flag.Parse()
	if err := run(ctx, os.Stdout, os.Stderr, *local); err != nil {
		cancel()
		log.Fatalf("telemetry: %v", err)
	}
}

// providers sets up tracing and metrics: OTLP/HTTP when the standard
// endpoint variable is set, else stdout (written to out). shutdown
// flushes what is left.
func providers(ctx context.Context, out io.Writer) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider, func(context.Context) error, error) {
	var (
		spans   sdktrace.SpanExporter
		metrics sdkmetric.Exporter
		err     error
	)
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		if spans, err = otlptracehttp.New(ctx); err != nil {
			return nil, nil, nil, err
		}
		if metrics, err = otlpmetrichttp.New(ctx); err != nil {
			return nil, nil, nil, err
		}
	} else {
		if spans, err = stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint()); err != nil {
			return nil, nil, nil, err
		}
		if metrics, err = stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint()); err != nil {
			return nil, nil, nil, err
		}
	}
	res := resource.NewSchemaless(semconv.ServiceName("sandbox-telemetry-example"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)), sdkmetric.WithResource(res))
	shutdown := func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}
	return tp, mp, shutdown, nil
}

// run does the task: what it does goes to errOut, the stdout exporters
// (when in use) write to out.
func run(ctx context.Context, out, errOut io.Writer, forceLocal bool) (err error) {
	tp, mp, shutdown, err := providers(ctx, out)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, shutdown(sctx))
	}()
	otel.SetTextMapPropagator(propagation.TraceContext{})

	b, err := backend.Open(ctx, errOut, forceLocal)
	if err != nil {
		return err
	}
	defer b.Close()
	// The one line that turns telemetry on; WithTraceInSandbox gives
	// every command the TRACEPARENT of its span.
	client, err := b.NewClient(otelsandbox.WithTelemetry(
		otelsandbox.WithTracerProvider(tp), otelsandbox.WithMeterProvider(mp), otelsandbox.WithTraceInSandbox()))
	if err != nil {
		return err
	}

	ctx, task := tp.Tracer("example/agent").Start(ctx, "agent-task")
	defer task.End()

	sb, err := client.Create(ctx, sandbox.CreateParams{Timeout: 10 * time.Minute})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(errOut, "sandbox %s\n", sb.Name())
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, serr := sb.Stop(sctx); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", serr))
		}
	}()

	err = sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("task.sh", []byte("#!/bin/sh\necho \"continuing trace $TRACEPARENT\"\nwc -c < input.txt > output.txt\n")).WithMode(0o755),
		files.FromBytes("input.txt", []byte("some input for the agent\n")),
	}, files.WriteParams{})
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	res, err := sb.Command("sh", "task.sh").Output(ctx)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	fmt.Fprintf(errOut, "command: %s", res)
	got, err := sb.FS().ReadFile(ctx, "output.txt")
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	fmt.Fprintf(errOut, "output.txt: %s", got)
	fmt.Fprintf(errOut, "trace %s\n", task.SpanContext().TraceID())
	return nil
}
