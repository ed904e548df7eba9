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
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest-server:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	token := flag.String("token", "", "accept only this bearer token (default: any non-empty token)")
	dir := flag.String("dir", "", "directory for sandbox filesystems (default: a temporary directory removed at exit)")
	verbose := flag.Bool("v", false, "log every request on stderr")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	opts := []sandboxtest.Option{
		sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()),
		sandboxtest.WithHostPaths(true),
		sandboxtest.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))),
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
	fmt.Printf("listening on http://%s\n", ln.Addr())
	fmt.Println("executor: host (local processes, not isolated)")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
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
