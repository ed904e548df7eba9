// Command sandboxtest-server runs the local Vercel Sandbox API (package
// sandbox/local) as a standalone HTTP server, so that clients in any language (the
// official TypeScript SDK included) can be tested against it. The official
// CLI works against it too; docs/testing.md says how to point it here.
//
// With --executor auto (the default), commands run isolated
// (isolated.Executor: a bubblewrap sandbox per command, a private root
// filesystem, limits) when this system allows it, else as ordinary host
// processes. --executor isolated insists on isolation; --executor host
// runs commands as ordinary processes with the privileges of the server,
// with host paths (local.WithHostPaths): use it only with code you
// trust.
//
// Usage:
//
//	sandboxtest-server [--listen 127.0.0.1:0] [--token TOKEN] [--dir DIR] [--executor auto|isolated|host] [--disk-quota SIZE] [--output-budget SIZE] [--output-limit SIZE] [--fault FAULT]...
//
// --disk-quota bounds the disk that each sandbox's files take (default
// 8GiB, local.DefaultDiskQuota). Where the server runs as root on Linux
// with loop devices, the kernel holds it (a file system of the sandbox's
// own, see local.WithDiskQuota); elsewhere it is watched.
//
// --output-budget bounds the command output the server keeps for replay,
// all commands together (default 256MiB), and --output-limit the output
// kept per command (default 64MiB); the oldest output is evicted first (see
// local.WithOutputBudget). SIZE is a number of bytes with an optional
// suffix KiB, MiB or GiB.
//
// Each --fault injects a fault from the start, in the text form of
// fault.Parse, for example
//
//	--fault 'POST /v2/sandboxes/sessions/*/cmd status=500 times=1'
//
// Faults can also be injected and removed while the server runs, and the
// request log read, through the control endpoint under /_sandboxtest/
// (see fault.ControlPrefix); it needs --token, and refuses every call
// without one.
//
// The first line printed on stdout is "listening on http://HOST:PORT"; the
// second names the executor: "executor: isolated" (followed, where
// commands with allow-all reach the host's abstract unix sockets, by why in
// parentheses) or "executor: host (REASON)"; where the disk quota is
// watched rather than held, the parentheses say so and why ("disk quota
// watched, not held: REASON"). SIGINT or SIGTERM stops every process the
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
	"strings"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

func main() { cli.Main("sandboxtest-server", run) }

// run serves until ctx ends, then stops every process it started.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("sandboxtest-server", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", "127.0.0.1:0", "address to listen on")
	token := fl.String("token", "", "accept only this bearer token (default: any non-empty token)")
	dir := fl.String("dir", "", "directory for sandbox filesystems (default: a temporary directory removed at exit)")
	verbose := fl.Bool("v", false, "log every request on stderr")
	execMode := fl.String("executor", "auto", "what runs commands: isolated, host, or auto (isolated when this system allows it)")
	var budget, limit byteSize
	quota := byteSize(local.DefaultDiskQuota)
	fl.Var(&quota, "disk-quota", "disk that each sandbox's files may take, such as 8GiB (default 8GiB)")
	fl.Var(&budget, "output-budget", "command output kept for replay, all commands together, such as 256MiB (default 256MiB)")
	fl.Var(&limit, "output-limit", "command output kept for replay per command, such as 64MiB (default 64MiB)")
	var faults faultFlags
	faults.register(fl)
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return cli.ErrUsage
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected argument %q\n", fl.Arg(0))
		fl.Usage()
		return cli.ErrUsage
	}

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	exec, mode, err := chooseExecutor(*execMode)
	if err != nil {
		if errors.Is(err, cli.ErrUsage) {
			fmt.Fprintln(stderr, err)
			fl.Usage()
		}
		return err
	}
	_, host := exec.(*hostexec.Executor)
	opts := []local.Option{
		local.WithExecutor(exec),
		local.WithHostPaths(host),
		local.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))),
		local.WithDiskQuota(int64(quota)),
	}
	if budget > 0 {
		opts = append(opts, local.WithOutputBudget(int64(budget)))
	}
	if limit > 0 {
		opts = append(opts, local.WithOutputLimit(int64(limit)))
	}
	inj := fault.NewInjector()
	opts = append(opts, inj.Options()...)
	if *token != "" {
		opts = append(opts, local.WithToken(*token))
	} else {
		opts = append(opts, local.WithAnyToken())
	}
	if *dir != "" {
		opts = append(opts, local.WithDir(*dir))
	}
	srv, err := local.New(opts...)
	if err != nil {
		return err
	}
	faults.inject(inj)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		srv.Close()
		return err
	}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	fmt.Fprintln(stdout, "executor: "+withNote(mode, quotaNote(srv)))

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

// chooseExecutor returns the executor the --executor flag asks for and how
// the second line of output names it.
func chooseExecutor(flagValue string) (local.Executor, string, error) {
	switch flagValue {
	case "host":
		return hostexec.New(), "host (--executor host: local processes, not isolated)", nil
	case "isolated":
		iso, err := isolated.New()
		if err != nil {
			return nil, "", err
		}
		return iso, iso.Mode(), nil
	case "auto", "":
		exec, mode := isolated.Best()
		return exec, mode, nil
	}
	return nil, "", fmt.Errorf("%w: --executor must be auto, isolated or host, not %q", cli.ErrUsage, flagValue)
}

// quotaNote says how srv keeps its disk quota when the kernel does not
// hold it, and nothing otherwise.
func quotaNote(srv *local.Server) string {
	if held, why := srv.DiskQuotaHeld(); !held {
		return why
	}
	return ""
}

// withNote adds note to the executor's mode, inside its parentheses when
// it has some.
func withNote(mode, note string) string {
	switch {
	case note == "":
		return mode
	case strings.HasSuffix(mode, ")"):
		return strings.TrimSuffix(mode, ")") + "; " + note + ")"
	}
	return mode + " (" + note + ")"
}
