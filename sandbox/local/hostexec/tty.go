package hostexec

import (
	"context"
	"errors"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
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
		return ttyExited{Process: &procio.Exited{Code: shellexec.NotFound, Msg: nf.Msg, Stderr: stderr}}, nil
	}
	if err != nil {
		return nil, err
	}
	if exited != nil {
		return ttyExited{Process: exited}, nil
	}
	return startTTY(ctx, s, rows, cols)
}

// ttyExited is a command on a terminal that never started.
type ttyExited struct {
	local.Process
	procio.NoTerminal
}
