// Command shell opens an interactive shell in a sandbox on this terminal,
// as the Vercel CLI's sandbox connect does: keys go to the sandbox, the
// terminal shows its screen, window size changes follow, and the program
// exits with the shell's exit code.
//
// The terminal is put in raw mode while the shell runs and restored on
// every way out: the shell exits, the connection fails, SIGTERM or SIGHUP.
// (In raw mode Ctrl-C and Ctrl-Z are keys for the sandbox's shell.)
//
// When standard input is not a terminal nothing waits for a keyboard: a
// script read from standard input (up to 1 MiB) runs on the sandbox's
// terminal and its exit code is the program's; with no script it says so
// and exits 0.
//
//	go run ./examples/shell
//	echo 'stty size; tty' | go run ./examples/shell
//
// With Vercel credentials in the environment (VERCEL_OIDC_TOKEN, or
// VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID) it uses Vercel.
// Without them it starts the embedded local server (package sandbox/local,
// running real processes on this machine, without isolation) and says so
// on standard error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/sbx-go/vercel-sandbox/examples/internal/backend"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// maxScript bounds a script read from standard input.
const maxScript = 1 << 20

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	local := flag.Bool("local", false, "use the embedded local server even when Vercel credentials are present")
	flag.Parse()
	code, err := run(ctx, os.Stdin, os.Stdout, os.Stderr, *local)
	if err != nil {
		stop()
		log.Fatalf("shell: %v", err) // the terminal is restored by now
	}
	stop()
	os.Exit(code)
}

// run opens a sandbox and runs the session: interactive when in is a
// terminal, else the script that in holds. It returns the exit code of the
// sandbox's shell.
func run(ctx context.Context, in *os.File, out, errOut io.Writer, forceLocal bool) (int, error) {
	var script string
	interactive := term.IsTerminal(int(in.Fd()))
	if !interactive {
		data, err := io.ReadAll(io.LimitReader(in, maxScript+1))
		if err != nil {
			return 0, fmt.Errorf("reading the script: %w", err)
		}
		if len(data) > maxScript {
			return 0, fmt.Errorf("the script on standard input is over %d bytes", maxScript)
		}
		script = string(data)
		if strings.TrimSpace(script) == "" {
			fmt.Fprintln(errOut, "standard input is not a terminal and holds no script: nothing to do.")
			fmt.Fprintln(errOut, "Run this from a terminal for an interactive shell, or pipe a script in:")
			fmt.Fprintln(errOut, "    echo 'stty size; tty' | go run ./examples/shell")
			return 0, nil
		}
	}

	b, err := backend.Open(ctx, errOut, forceLocal)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	client, err := b.NewClient()
	if err != nil {
		return 0, err
	}
	sb, err := client.Create(ctx, sandbox.CreateParams{Timeout: 30 * time.Minute})
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, err := sb.Stop(sctx); err != nil {
			fmt.Fprintf(errOut, "stopping sandbox %s: %v\n", sb.Name(), err)
		}
	}()

	if !interactive {
		return pty.Run(ctx, sb, &pty.Cmd{Name: "sh", Args: []string{"-c", script}, Stdout: out})
	}
	fmt.Fprintf(errOut, "sandbox %s: exit the shell to leave.\n", sb.Name())
	return shell(ctx, sb, in, out)
}

// shell runs an interactive shell with in as its keyboard, which is in
// raw mode until shell returns.
func shell(ctx context.Context, sb *sandbox.Sandbox, in *os.File, out io.Writer) (code int, err error) {
	fd := int(in.Fd())
	rows, cols := 24, 80
	if w, h, err := term.GetSize(fd); err == nil {
		rows, cols = h, w
	}
	keys, restoreKeys, err := keyboard(in)
	if err != nil {
		return 0, err
	}
	defer restoreKeys()
	state, err := term.MakeRaw(fd)
	if err != nil {
		return 0, fmt.Errorf("raw mode: %w", err)
	}
	defer func() {
		if rerr := term.Restore(fd, state); rerr != nil && err == nil {
			err = fmt.Errorf("restoring the terminal: %w", rerr)
		}
	}()

	s, err := pty.Start(ctx, sb, &pty.Cmd{
		Rows: rows, Cols: cols,
		Env:   map[string]string{"PS1": "sandbox:$PWD$ "},
		Stdin: keys, Stdout: out,
	})
	if err != nil {
		return 0, err
	}
	stopResize := followResize(fd, s)
	defer stopResize()
	code, err = s.Wait()
	if errors.Is(err, context.Canceled) {
		return 0, errors.New("interrupted")
	}
	return code, err
}
