// Command quickstart walks through the main features of the library:
// create a sandbox, write files, run a command with streamed output, run a
// detached command and follow its logs, read a file back, stop.
//
// With Vercel credentials in the environment (VERCEL_OIDC_TOKEN, or
// VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID) it uses Vercel.
// Without them it starts the embedded local server (package sandboxtest,
// running real processes on this machine) and says so.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func main() {
	log.SetFlags(0)
	// Ctrl-C cancels the run; the deferred stop and server shutdown still
	// happen, so nothing is left running.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 5*time.Minute)
	defer cancel()
	local := flag.Bool("local", false, "use the embedded local server even when Vercel credentials are present")
	flag.Parse()
	if err := run(ctx, os.Stdout, *local); err != nil {
		cancel()
		log.Fatalf("quickstart: %v", err)
	}
}

func step(out io.Writer, format string, args ...any) {
	fmt.Fprintf(out, "==> "+format+"\n", args...)
}

func connect(ctx context.Context, out io.Writer, forceLocal bool) (*sandbox.Client, func(), error) {
	creds := auth.Default(auth.DefaultOptions{})
	if _, err := creds.Credentials(ctx); err == nil && !forceLocal {
		step(out, "using Vercel (credentials found in the environment)")
		c, err := sandbox.NewClient(sandbox.WithCredentials(creds))
		return c, func() {}, err
	}
	srv, err := sandboxtest.New(
		sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()),
		sandboxtest.WithHostPaths(true),
	)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	go srv.Serve(ln) //nolint:errcheck // returns after Close
	url := "http://" + ln.Addr().String()
	step(out, "no Vercel credentials in use: using the embedded local server at %s", url)
	step(out, "(it runs commands as local processes on this machine, without isolation)")
	c, err := sandbox.NewClient(sandbox.WithBaseURL(url), sandbox.WithToken(srv.Token(), "team_local", "prj_local"))
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return c, srv.Close, nil
}

func run(ctx context.Context, out io.Writer, forceLocal bool) error {
	client, closeFn, err := connect(ctx, out, forceLocal)
	if err != nil {
		return err
	}
	defer closeFn()

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
	err = sb.WriteFiles(ctx, []files.Entry{
		files.FromString("hello.sh", "#!/bin/sh\nfor i in 1 2 3; do echo \"hello $i from $(uname -s)\"; sleep 0.2; done\n").WithMode(0o755),
		files.FromString("data/numbers.txt", "3\n1\n2\n"),
	})
	if err != nil {
		return fmt.Errorf("write files: %w", err)
	}

	step(out, "running an attached command; its output streams as it is produced")
	res, err := sb.Run(ctx, &command.Cmd{Name: "sh", Args: []string{"hello.sh"}, Stdout: prefixed(out, "    | ")})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	fmt.Fprintf(out, "    exit code %d after %s\n", res.ExitCode, res.Duration.Round(time.Millisecond))

	step(out, "starting a detached command and following its logs")
	h, err := sb.Start(ctx, &command.Cmd{Name: "sh", Args: []string{"-c", "sort -n data/numbers.txt > data/sorted.txt && cat data/sorted.txt"}})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Fprintf(out, "    command reference (store it to reattach later): %s\n", h.Ref())
	for ev, err := range h.Logs(ctx) {
		if err != nil {
			return fmt.Errorf("logs: %w", err)
		}
		fmt.Fprintf(prefixed(out, "    "+ev.Stream.String()+" | "), "%s", ev.Data)
	}
	if _, err := h.Wait(ctx); err != nil {
		return fmt.Errorf("wait: %w", err)
	}

	step(out, "reading a file back")
	data, err := sb.ReadFileBytes(ctx, "data/sorted.txt")
	if err != nil {
		return fmt.Errorf("read file: %w", err)
	}
	fmt.Fprintf(out, "    data/sorted.txt = %q\n", data)
	return nil
}

type prefixWriter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func prefixed(w io.Writer, prefix string) io.Writer {
	return &prefixWriter{w: w, prefix: prefix, bol: true}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var sb strings.Builder
	for _, c := range string(b) {
		if p.bol {
			sb.WriteString(p.prefix)
		}
		sb.WriteRune(c)
		p.bol = c == '\n'
	}
	_, err := io.WriteString(p.w, sb.String())
	return len(b), err
}
