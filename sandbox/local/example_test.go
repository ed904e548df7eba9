package local_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// start serves srv on a loopback port and returns a client aimed at it.
func start(srv *local.Server) *sandbox.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(ln); err != nil {
		log.Fatal(err)
	}
	return srv.Client()
}

// The local API outside a test: New, Start (or Serve) and Close. Client returns a
// *sandbox.Client aimed at it, and the inspection methods tell what the
// code under test did.
func ExampleNew() {
	script := sandboxtest.NewScript().Handle(sandboxtest.MatchArgs("node", "--version"), sandboxtest.Reply{Stdout: "v24.0.0\n"})
	srv, err := local.New(local.WithExecutor(script), local.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := start(srv)
	ctx := context.Background()

	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "inspect-me"})
	if err != nil {
		log.Fatal(err)
	}
	out, err := sb.Command("node", "--version").Output(ctx)
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

// LeakedSandboxes lists the sandboxes left running; in a test,
// sandboxtest's CheckLeaks (or AssertNoLeakedSandboxes) turns them into a failure.
func ExampleServer_LeakedSandboxes() {
	srv, err := local.New()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := start(srv)
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
			err = sb.Delete(ctx, sandbox.DeleteParams{})
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

// A disk quota per sandbox: an upload that would pass it is refused, and
// so is a command that writes past it (killed, with a message).
func ExampleWithDiskQuota() {
	srv, err := local.New(local.WithDiskQuota(1<<20), local.WithSeed(1)) // 1 MiB per sandbox
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	client := start(srv)
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	err = sb.FS().WriteFile(ctx, "/vercel/sandbox/big.bin", make([]byte, 2<<20), 0o644)
	var apiErr *sandbox.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, strings.Contains(apiErr.Message, "disk quota"))
	}
	fmt.Println(sb.FS().WriteFile(ctx, "/vercel/sandbox/small.txt", []byte("fits"), 0o644))
	// Output:
	// 400 true
	// <nil>
}
