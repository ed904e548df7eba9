package sandboxtest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// serve starts srv on a loopback port and returns a client aimed at it.
// In a test, NewServer does this (and the closing) for you.
func serve(srv *sandboxtest.Server) *sandbox.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	// Serve sets URL once it runs; the address is known already.
	return srv.Client(sandbox.WithBaseURL("http://" + ln.Addr().String()))
}

// The fake outside a test: New, Serve and Close. Client returns a
// *sandbox.Client aimed at it, and the inspection methods tell what the
// code under test did.
func ExampleNew() {
	srv, err := sandboxtest.New(sandboxtest.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Script().Handle(sandboxtest.MatchArgs("node", "--version"), sandboxtest.Reply{Stdout: "v24.0.0\n"})
	client := serve(srv)
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "inspect-me"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := sb.Output(ctx, &command.Cmd{Name: "node", Args: []string{"--version"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("output: %q\n", out)

	fmt.Println("commands run:", srv.CommandCount())
	for _, c := range srv.Commands() {
		fmt.Println("command:", c.Command.Name, c.Command.Args, "in", c.SandboxName, "exit", *c.Command.ExitCode)
	}
	for _, r := range srv.Requests() {
		fmt.Println(r.Method, r.Path, r.Status, r.Header.Get("Authorization"))
	}
	// Output:
	// output: "v24.0.0\n"
	// commands run: 1
	// command: node [--version] in inspect-me exit 0
	// POST /v3/sandboxes 200 Bearer [REDACTED]
	// POST /v2/sandboxes/sessions/sbx_9SqLx3LrtcwfWdtfJ8hcKyByOCi6/cmd 200 Bearer [REDACTED]
}

// With NewLocalExecutor commands are real host processes: a real shell,
// real exit codes, and files shared with the client through the
// sandbox's directory.
func ExampleNewLocalExecutor() {
	srv, err := sandboxtest.New(sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := serve(srv)
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	if err := sb.WriteFile(ctx, "greeting.txt", []byte("hello from the client")); err != nil {
		log.Fatal(err)
	}
	out, err := sb.Output(ctx, &command.Cmd{Name: "cat", Args: []string{"greeting.txt"}})
	fmt.Printf("%s %v\n", out, err)

	_, err = sb.Run(ctx, &command.Cmd{Name: "sh", Args: []string{"-c", "echo disk full >&2; exit 3"}})
	var exit *command.ExitError
	if errors.As(err, &exit) {
		fmt.Println("exit code:", exit.ExitCode, "stderr:", string(exit.Stderr))
	}
	// Output:
	// hello from the client <nil>
	// exit code: 3 stderr: disk full
}

// LeakedSandboxes lists the sandboxes left running; in a test,
// WithLeakCheck (or AssertNoLeakedSandboxes) turns them into a failure.
func ExampleServer_LeakedSandboxes() {
	srv, err := sandboxtest.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := serve(srv)
	ctx := context.Background()

	for _, name := range []string{"tidy", "forgotten", "removed"} {
		sb, err := client.Create(ctx, sandbox.CreateParams{Name: name, Tags: map[string]string{"job": name}})
		if err != nil {
			log.Fatal(err)
		}
		switch name {
		case "tidy":
			_, err = sb.Stop(ctx)
		case "removed":
			err = sb.Delete(ctx)
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	for _, l := range srv.LeakedSandboxes() {
		fmt.Println(l.Name, l.Status, l.Tags)
	}
	fmt.Println("background work before Close:", srv.LiveGoroutines())
	srv.Close()
	fmt.Println("after Close:", srv.LiveGoroutines())
	// Output:
	// forgotten running map[job:forgotten]
	// background work before Close: 0
	// after Close: 0
}

// RunConformance takes a *testing.T, so this example shows the test to
// write rather than running it. The fake below runs real shell commands and
// reproducible ids; the same call with a client aimed elsewhere checks
// that API instead.
func ExampleRunConformance() {
	testConformance := func(t *testing.T) {
		srv := sandboxtest.NewServer(t,
			sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()),
			sandboxtest.WithSeed(1),
			sandboxtest.WithLeakCheck(),
		)
		sandboxtest.RunConformance(t, func(*testing.T) *sandbox.Client { return srv.Client() },
			sandboxtest.ConformancePrefix("myservice"),
			sandboxtest.ConformanceSkip(sandboxtest.ScenarioResume))
	}
	_ = testConformance
}
