// Command quickstart walks through the main features of the library:
// create a sandbox, write files, run a command with streamed output, run a
// detached command and follow its logs, read a file back, stop.
//
// With Vercel credentials in the environment (VERCEL_OIDC_TOKEN, or
// VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID) it uses Vercel.
// Without them it starts the embedded local server (package sandbox/local,
// running real processes on this machine, without isolation) and says so
// on standard error.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

func main() {
	log.SetFlags(0)
	// Ctrl-C cancels the run; the deferred stop and server shutdown still
	// happen, so nothing is left running.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 5*time.Minute)
	defer cancel()
	forceLocal := backend.LocalFlag()
	flag.Parse()
	if err := run(ctx, os.Stdout, os.Stderr, *forceLocal); err != nil {
		cancel()
		log.Fatalf("quickstart: %v", err)
	}
}

// connect returns a client for Vercel when credentials are found in the
// environment and forceLocal is false. Otherwise it starts the embedded
// local server on a loopback port, with commands run as processes on this
// machine (hostexec, not isolated), and returns a client aimed at it;
// closeBackend stops the server, its sandboxes and their processes.
func connect(ctx context.Context, errOut io.Writer, forceLocal bool) (client *sandbox.Client, closeBackend func(), err error) {
	if !forceLocal {
		creds := vercelcli.Default(auth.DefaultOptions{})
		if _, err := creds.Credentials(ctx); err == nil {
			fmt.Fprintln(errOut, "using Vercel (credentials found in the environment)")
			client, err := sandbox.NewClient(sandbox.WithCredentials(creds))
			return client, func() {}, err
		}
	}
	srv, client, err := local.Listen(ctx, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	if err != nil {
		return nil, nil, fmt.Errorf("starting the embedded local server: %w", err)
	}
	fmt.Fprintf(errOut, "no Vercel credentials in use: using the embedded local server at %s\n", srv.URL())
	fmt.Fprintln(errOut, "(it runs commands as local processes on this machine, without isolation)")
	return client, srv.Close, nil
}

func step(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

// run is the walk-through: progress goes to out, and which backend is in
// use (Vercel or the embedded local server) to errOut.
func run(ctx context.Context, out, errOut io.Writer, forceLocal bool) error {
	client, closeBackend, err := connect(ctx, errOut, forceLocal)
	if err != nil {
		return err
	}
	defer closeBackend()

	step(out, "creating a sandbox")
	sb, err := client.Create(ctx, sandbox.CreateParams{Timeout: 10 * time.Minute})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(out, "    sandbox %s, session %s, cwd %s\n", sb.Name(), sb.SessionID(), sb.Cwd())
	defer func() {
		step(out, "stopping the sandbox")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if res, err := sb.Stop(sctx); err != nil {
			fmt.Fprintf(out, "    stop failed: %v\n", err)
		} else {
			fmt.Fprintf(out, "    session %s is %s\n", res.Session.ID, res.Session.Status)
		}
	}()

	step(out, "writing files")
	err = sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("hello.sh", []byte("#!/bin/sh\nfor i in 1 2 3; do echo \"hello $i from $(uname -s)\"; sleep 0.2; done\n")).WithMode(0o755),
		files.FromBytes("data/numbers.txt", []byte("3\n1\n2\n")),
	}, files.WriteParams{})
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}

	step(out, "running an attached command; its output streams as it is produced")
	cmd := sb.Command("sh", "hello.sh")
	cmd.Stdout = backend.Prefixed(out, "    | ")
	res, err := cmd.Run(ctx)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	fmt.Fprintf(out, "    exit code %d after %s\n", res.ExitCode(), res.Duration.Round(time.Millisecond))

	step(out, "starting a detached command and following its logs")
	h, err := sb.Command("sh", "-c", "sort -n data/numbers.txt > data/sorted.txt && cat data/sorted.txt").Start(ctx)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Fprintf(out, "    command reference (store it to reattach later): %s\n", h.Ref())
	for ev, err := range h.Logs(ctx) {
		if err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		fmt.Fprintf(backend.Prefixed(out, "    "+ev.Stream.String()+" | "), "%s", ev.Data)
	}
	if _, err := h.Wait(ctx); err != nil {
		return fmt.Errorf("wait: %w", err)
	}

	step(out, "reading a file back")
	data, err := sb.FS().ReadFile(ctx, "data/sorted.txt")
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	fmt.Fprintf(out, "    data/sorted.txt = %q\n", data)
	return nil
}
