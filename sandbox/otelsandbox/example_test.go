package otelsandbox_test

import (
	"context"
	"fmt"
	"log"

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
	ctx := context.Background()
	srv, _, err := local.Listen(ctx, local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client, err := sandbox.NewClient(sandbox.WithBaseURL(srv.URL()), sandbox.WithToken(srv.Token()),
		sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID),
		otelsandbox.WithTelemetry(otelsandbox.WithTracerProvider(tp), otelsandbox.WithMeterProvider(mp)))
	if err != nil {
		log.Fatal(err)
	}
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
