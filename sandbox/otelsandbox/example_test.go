package otelsandbox_test

import (
	"context"
	"fmt"
	"log"
	"net"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func ExampleWithTelemetry() {
	// Spans go to memory here; a program would use an OTLP exporter
	// (see examples/telemetry) and usually the global providers, which
	// WithTelemetry() with no options uses.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer tp.Shutdown(context.Background())
	defer mp.Shutdown(context.Background())

	// A local server stands in for Vercel; against Vercel, pass the option
	// to sandbox.NewClient.
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	srv, err := local.New(local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ln); err != nil {
		log.Fatal(err)
	}
	client := srv.Client(otelsandbox.WithTelemetry(otelsandbox.WithTracerProvider(tp), otelsandbox.WithMeterProvider(mp)))
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := sb.Command("echo", "hello").Output(ctx); err != nil {
		log.Fatal(err)
	}
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name, s.SpanKind)
	}
	// Output:
	// POST client
	// sandbox.create internal
	// POST client
	// sandbox.command.run internal
}
