// Package cli is the shell of the test kit's commands (sandboxtest-server,
// cassette-replay): signals, exit codes and the usage error.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// ErrUsage reports bad command-line arguments; the flag package or the
// command has already explained them on stderr.
var ErrUsage = errors.New("usage error")

// Main runs run with the process's arguments and a context that ends on
// SIGINT or SIGTERM, then exits: 0 on success, 2 on ErrUsage, 1 on any
// other error, printed after the command's name.
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
