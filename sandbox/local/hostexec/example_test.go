//go:build unix

package hostexec_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// With the host executor commands are real host processes: a real shell,
// real exit codes, and files shared with the client through the
// sandbox's directory.
func ExampleNew() {
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(hostexec.New()))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	if err := sb.FS().WriteFile(ctx, "greeting.txt", []byte("hello from the client"), 0o644); err != nil {
		log.Fatal(err)
	}
	out, err := sb.Command("cat", "greeting.txt").Output(ctx)
	fmt.Printf("%s %v\n", out, err)

	_, err = sb.Command("sh", "-c", "echo disk full >&2; exit 3").Run(ctx)
	var exit *command.ExitError
	if errors.As(err, &exit) {
		fmt.Println("exit code:", exit.ExitCode(), "stderr:", string(exit.Stderr))
	}
	// Output:
	// hello from the client <nil>
	// exit code: 3 stderr: disk full
}
