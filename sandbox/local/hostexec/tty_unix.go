//go:build unix

package hostexec

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
)

// startTTY starts the command of s on a new terminal of rows by cols, as
// its controlling terminal and the leader of a new session.
func startTTY(ctx context.Context, s localStart, rows, cols int) (local.TTYProcess, error) {
	master, tty, err := procio.OpenTTY(rows, cols)
	if err != nil {
		return nil, fmt.Errorf("hostexec: %w", err)
	}
	c, tr, err := startCmd(ctx, s, func(c *exec.Cmd) {
		c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	})
	// The child has its own copy of the terminal; ours must go so that
	// reads of the master end once the child's is closed.
	tty.Close()
	if err != nil {
		master.Close()
		proc, err := startFailure(s, err)
		if err != nil {
			return nil, err
		}
		return ttyExited{Process: proc}, nil
	}
	// One output, the master: it is read and drained as a pipe would be.
	return &ttyProcess{
		localProcess: watch(ctx, c, tr, s.waitDelay, master, master, s.stdout, s.stdout),
		Terminal:     procio.Terminal{Master: master},
	}, nil
}

// ttyProcess is a process group on a terminal; the terminal takes the
// input and the size.
type ttyProcess struct {
	*localProcess
	procio.Terminal
}
