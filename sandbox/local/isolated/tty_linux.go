package isolated

import (
	"context"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/isolate"
	"github.com/sbx-go/vercel-sandbox/internal/procio"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// StartTTY implements local.TTYExecutor: cmd runs in a sandbox as Start
// runs it (the same namespaces, filesystem, environment, limits, control
// group and seccomp filter, no other descriptor of the server, and the
// end of every process of the sandbox with the command), but on a new
// pseudo-terminal of rows by cols, its controlling terminal, with the
// terminal's output (standard output and standard error are one stream)
// copied to cmd.Stdout. The command leads a new session whose controlling
// terminal is that one (through the host's setsid(1) -c; without it, the
// command runs in the session of bwrap, which then holds the terminal);
// inside, /dev/tty is that terminal, which also shows at /dev/console. The
// terminal is private to the command: it cannot reach the server's. A
// memory limit's marker goes to the terminal's stream.
func (e *Executor) StartTTY(ctx context.Context, cmd *local.Cmd, rows, cols int) (local.TTYProcess, error) {
	out, _ := procio.Writers(cmd.Stdout, nil) // a terminal has one stream, messages included
	spec, exited, err := e.spec(ctx, cmd, out)
	if err != nil {
		return nil, err
	}
	if exited != nil {
		return ttyExited{Process: exited}, nil
	}
	master, tty, err := procio.OpenTTY(rows, cols)
	if err != nil {
		return nil, fmt.Errorf("isolated: %w", err)
	}
	// One output, the master: it is read and drained as a pipe would be.
	p, err := e.launch(ctx, spec, isolate.Options{TTY: tty}, master, master, out, out)
	if err != nil {
		return nil, err
	}
	return &ttyProcess{isolatedProcess: p, Terminal: procio.Terminal{Master: master}}, nil
}

// ttyProcess is a sandbox on a terminal; the terminal takes the input and
// the size.
type ttyProcess struct {
	*isolatedProcess
	procio.Terminal
}

// ttyExited is a command on a terminal that never started.
type ttyExited struct {
	local.Process
	procio.NoTerminal
}
