//go:build unix

package pty_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// A command on a terminal: it sees a TTY of the size asked for, and its
// exit code comes back. A program would set Stdin and Stdout to its own
// terminal in raw mode (see examples/shell).
func ExampleStart() {
	// A local backend whose commands run as host processes on real
	// terminals; with Vercel credentials, use sandbox.NewClient instead.
	ctx := context.Background()
	srv, client, err := local.Listen(ctx, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	sb, err := client.Create(ctx, sandbox.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}

	var screen strings.Builder
	s, err := pty.Start(ctx, sb, &pty.Cmd{
		Name:   "sh",
		Args:   []string{"-c", "stty size; exit 3"},
		Rows:   40,
		Cols:   120,
		Stdout: &screen,
	})
	if err != nil {
		log.Fatal(err)
	}
	code, err := s.Wait()
	fmt.Printf("%q exit %d %v\n", screen.String(), code, err)
	// Output:
	// "40 120\r\n" exit 3 <nil>
}
