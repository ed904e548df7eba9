package sandbox

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
)

// Run runs cmd attached: its output reaches cmd.Stdout and cmd.Stderr as
// it is produced, and Run returns when the command ends. The result holds
// the exit code and the captured output. A non-zero exit code gives the
// result and an *command.ExitError. The command is sent once; it is never
// re-sent after a failure that may have started it.
//
// A run that ends before its command does (ctx ends, InactivityTimeout
// fires, a cut stream cannot be followed, output cannot be delivered
// whole) returns, once the command has started, its partial result with
// the error, as os/exec keeps its buffers: the output captured so far,
// CommandID and SessionID to reattach with (see Attach), and ExitCode -1,
// since the exit code is not known.
func (s *Sandbox) Run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	return command.Run(ctx, s.conn, cmd)
}

// Output runs cmd attached and returns its captured stdout. A non-zero
// exit code gives the output and an *command.ExitError; a run that ends
// early (see Run) gives the stdout captured so far with its error.
func (s *Sandbox) Output(ctx context.Context, cmd *command.Cmd) ([]byte, error) {
	return command.Output(ctx, s.conn, cmd)
}

// CombinedOutput runs cmd attached and returns stdout and stderr
// interleaved as they arrived, up to the capture limit. A run that ends
// early (see Run) gives the output captured so far with its error.
func (s *Sandbox) CombinedOutput(ctx context.Context, cmd *command.Cmd) ([]byte, error) {
	return command.CombinedOutput(ctx, s.conn, cmd)
}

// Start starts cmd detached and returns at once with a handle to wait on,
// kill or read the logs of. cmd.Stdout, cmd.Stderr and InactivityTimeout do
// not apply; use the handle's CopyOutput or Logs. The command is sent once.
func (s *Sandbox) Start(ctx context.Context, cmd *command.Cmd) (*command.Handle, error) {
	return command.Start(ctx, s.conn, cmd)
}

// Attach returns a handle to a command of this sandbox's current session.
func (s *Sandbox) Attach(commandID string) (*command.Handle, error) {
	return command.Attach(s.conn, command.Ref{SandboxName: s.name, SessionID: s.SessionID(), CommandID: commandID})
}

// Attach returns a handle to the command ref names, for example one
// started by another process and stored as text (see command.ParseRef).
func (c *Client) Attach(ref command.Ref) (*command.Handle, error) {
	return command.Attach(&conn.Conn{Core: c.core, SandboxName: ref.SandboxName, Reattach: c.reattach}, ref)
}

// run runs cmd attached, for the calls of this package that need a command.
func (s *Sandbox) run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	return s.Run(ctx, cmd)
}
