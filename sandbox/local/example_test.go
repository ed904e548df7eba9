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

// The local API embedded in a program: Listen serves it on a loopback
// port and returns a client aimed at it; Close stops it. The inspection
// methods tell what the code under test did.
func ExampleListen() {
	script := sandboxtest.NewScript().Handle(sandboxtest.MatchArgs("node", "--version"), sandboxtest.Reply{Stdout: "v24.0.0\n"})
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(script), local.WithSeed(1))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

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

// New, then Start (or Serve) on a listener of your own, for an address
// other than a loopback port; the clients use URL and Token.
func ExampleNew() {
	srv, err := local.New(local.WithToken("a secret of the program"))
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
	client, err := sandbox.NewClient(sandbox.WithBaseURL(srv.URL()), sandbox.WithToken(srv.Token()),
		sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Create(context.Background(), sandbox.CreateParams{Name: "mine"})
	fmt.Println(err)

	// Another token is refused.
	other, err := sandbox.NewClient(sandbox.WithBaseURL(srv.URL()), sandbox.WithToken("guessed"),
		sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	if err != nil {
		log.Fatal(err)
	}
	_, err = other.Get(context.Background(), "mine")
	fmt.Println(errors.Is(err, sandbox.ErrForbidden))
	// Output:
	// <nil>
	// true
}

// LeakedSandboxes lists the sandboxes left running; in a test,
// sandboxtest's CheckLeaks (or AssertNoLeakedSandboxes) turns them into a failure.
func ExampleServer_LeakedSandboxes() {
	ctx := context.Background()
	srv, client, err := local.Listen(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

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
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithDiskQuota(1<<20), local.WithSeed(1)) // 1 MiB per sandbox
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
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
