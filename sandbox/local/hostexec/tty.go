package hostexec

import (
	"context"
	"errors"

	"github.com/sbx-go/vercel-sandbox/internal/procio"
	"github.com/sbx-go/vercel-sandbox/internal/shellexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// StartTTY implements local.TTYExecutor: cmd runs as Start runs it (the
// same environment, working directory and lookup), but on a new
// pseudo-terminal that is its controlling terminal, as the leader of a new
// session, with the terminal's output (standard output and standard error
// are one stream) copied to cmd.Stdout. When the command's main process
// exits, its process group is killed; processes the shell moved to other
// groups (background jobs) lose the terminal once Wait returns, WaitDelay at
// most after the group was killed.
func (e *Executor) StartTTY(ctx context.Context, cmd *local.Cmd, rows, cols int) (local.TTYProcess, error) {
	one := *cmd
	one.Stderr = cmd.Stdout // a terminal has one stream, messages included
	s, exited, err := e.prepare(ctx, &one)
	var nf *local.NotFoundError
	if errors.As(err, &nf) {
		// A terminal shows what a shell would, whatever the API's mode.
		_, stderr := procio.Writers(one.Stdout, one.Stderr)
		return ttyExited{&procio.Exited{Code: shellexec.NotFound, Msg: nf.Msg, Stderr: stderr}}, nil
	}
	if err != nil {
		return nil, err
	}
	if exited != nil {
		return ttyExited{exited}, nil
	}
	return startTTY(ctx, s, rows, cols)
}

// errTTYEnded is what input to a terminal whose command ended gets.
var errTTYEnded = errors.New("hostexec: the command has ended")

// ttyExited is a command on a terminal that never started.
type ttyExited struct{ local.Process }

// Write fails: there is no terminal.
func (ttyExited) Write([]byte) (int, error) { return 0, errTTYEnded }

// Resize fails: there is no terminal.
func (ttyExited) Resize(int, int) error { return errTTYEnded }
