package isolated

import (
	"context"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
)

// StartTTY implements local.TTYExecutor: cmd runs in a sandbox as Start
// runs it (the same namespaces, filesystem, environment, limits, control
// group and seccomp filter, no other descriptor of the server, and the
// end of every process of the sandbox with the command), but on a new
// pseudo-terminal of rows by cols, with the terminal's output (standard
// output and standard error are one stream) copied to cmd.Stdout. The
// command leads a new session whose controlling terminal is that one
// (through the host's setsid(1) -c; without it, the command runs in the
// session of bwrap, which then holds the terminal); inside, /dev/tty is
// that terminal, which also shows at /dev/console. The terminal is
// private to the command: it cannot reach the server's. A memory limit's
// marker goes to the terminal's stream.
func (e *Executor) StartTTY(ctx context.Context, cmd *local.Cmd, rows, cols int) (local.TTYProcess, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("isolated: invalid terminal size %dx%d", rows, cols)
	}
	one := *cmd
	one.Stderr = cmd.Stdout // a terminal has one stream, messages included
	p, err := e.start(ctx, &one, &ttySize{rows: rows, cols: cols})
	if err != nil {
		return nil, err
	}
	if tp, ok := p.(*ttyProcess); ok {
		return tp, nil
	}
	return ttyExited{Process: p}, nil
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
