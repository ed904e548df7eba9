// Command sandboxtest-server runs the sandboxtest fake of the Vercel Sandbox
// API as a standalone HTTP server, so that clients in any language (the
// official TypeScript SDK included) can be tested against it.
//
// Commands run as ordinary processes on this host, with the privileges of
// the server: there is no isolation. Use it only on a machine and with code
// you trust.
//
// Usage:
//
//	sandboxtest-server [--listen 127.0.0.1:0] [--token TOKEN] [--dir DIR]
//
// The first line printed on stdout is "listening on http://HOST:PORT"; the
// second names the executor. SIGINT or SIGTERM stops every process the
// server started and exits with status 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		stop()
		if errors.Is(err, errUsage) {
			os.Exit(2) // the flag package has explained
		}
		fmt.Fprintln(os.Stderr, "sandboxtest-server:", err)
		os.Exit(1)
	}
}

// errUsage reports bad command-line arguments.
var errUsage = errors.New("usage error")

// run serves until ctx ends, then stops every process it started.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("sandboxtest-server", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", "127.0.0.1:0", "address to listen on")
	token := fl.String("token", "", "accept only this bearer token (default: any non-empty token)")
	dir := fl.String("dir", "", "directory for sandbox filesystems (default: a temporary directory removed at exit)")
	verbose := fl.Bool("v", false, "log every request on stderr")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected argument %q\n", fl.Arg(0))
		fl.Usage()
		return errUsage
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	opts := []sandboxtest.Option{
		sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()),
		sandboxtest.WithHostPaths(true),
		sandboxtest.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))),
	}
	if *token != "" {
		opts = append(opts, sandboxtest.WithToken(*token))
	}
	if *dir != "" {
		opts = append(opts, sandboxtest.WithDir(*dir))
	}
	srv, err := sandboxtest.New(opts...)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Close()
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	fmt.Fprintln(stdout, "executor: host (local processes, not isolated)")

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		return <-served
	case err := <-served:
		srv.Close()
		return err
	}
}
