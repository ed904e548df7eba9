package command_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// fake starts an in-process fake of the API whose commands are played by
// script, and returns a sandbox on it. Against the real API, create the
// client with sandbox.NewClient() and credentials from the environment.
func fake(script *sandboxtest.Script) (*sandbox.Client, *sandbox.Sandbox, func()) {
	srv, client, err := local.Listen(context.Background(), local.WithExecutor(script))
	if err != nil {
		log.Fatal(err)
	}
	sb, err := client.Create(context.Background(), sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	return client, sb, srv.Close
}

// Run a command attached: its output streams into the writers as it
// arrives, and a non-zero exit code is an *ExitError that keeps the result.
func Example() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("make"), sandboxtest.Steps{}.
		Stdout("compiling\n").Stderr("error: no rule to make target\n").Exit(2))
	_, sb, stop := fake(script)
	defer stop()
	ctx := context.Background()

	cmd := sb.Command("make", "release")
	cmd.Dir = "/vercel/sandbox"
	cmd.Timeout = time.Minute                // the sandbox kills it after a minute
	cmd.InactivityTimeout = 30 * time.Second // or after 30 s of silence
	cmd.Stdout = os.Stdout
	res, err := cmd.Run(ctx) // cancelling ctx kills the command
	var ee *command.ExitError
	if errors.As(err, &ee) {
		fmt.Println("exit code:", ee.ExitCode())
		fmt.Printf("stderr: %q\n", res.Stderr)
	}
	// Output:
	// compiling
	// exit code: 2
	// stderr: "error: no rule to make target\n"
}

// Start a command detached, store its Ref, and reattach to it later, as
// another process would.
func ExampleHandle() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("npm"), sandboxtest.Steps{}.Stdout("built\n"))
	client, sb, stop := fake(script)
	defer stop()
	ctx := context.Background()

	h, err := sb.Command("npm", "run", "build").Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	stored, err := h.Ref().MarshalText() // e.g. into a database column
	if err != nil {
		log.Fatal(err)
	}

	var ref command.Ref
	if err := ref.UnmarshalText(stored); err != nil {
		log.Fatal(err)
	}
	again, err := client.Attach(ref)
	if err != nil {
		log.Fatal(err)
	}
	if err := again.CopyOutput(ctx, os.Stdout, os.Stderr); err != nil {
		log.Fatal(err)
	}
	res, err := again.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", res.ExitCode())
	// Output:
	// built
	// exit code: 0
}

// Start a command, let it run while doing other work, then wait for it:
// Wait streams its output into the Cmd's writers, as Run would.
func ExampleCmd_Start() {
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("test"), sandboxtest.Steps{}.Stdout("ok\n").Exit(0))
	_, sb, stop := fake(script)
	defer stop()
	ctx := context.Background()

	cmd := sb.Command("test", "./...")
	cmd.Stdout = os.Stdout
	h, err := cmd.Start(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// ... other work ...
	res, err := h.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code:", res.ExitCode())
	// Output:
	// ok
	// exit code: 0
}

func ExampleParseRef() {
	ref, err := command.ParseRef("my-app/sbx_123/cmd_456")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ref.SandboxName, ref.SessionID, ref.CommandID)
	// Output: my-app sbx_123 cmd_456
}
