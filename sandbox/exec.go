package sandbox

import (
	"context"
	"iter"
	"net/url"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The bridge to package command's unexported constructors, which command
// sets in its init (see conn.BindCmd).
var (
	bindCmd     = conn.BindCmd.(func(*command.Cmd, *conn.Conn, func(*command.Cmd) (string, []string, map[string]string, string)) *command.Cmd)
	attachCmd   = conn.AttachCmd.(func(*conn.Conn, command.Ref) (*command.Handle, error))
	commandInfo = conn.CommandInfo.(func(*wire.Command) command.Info)
)

// Command returns a command that runs name with args in the sandbox, as
// exec.Command does locally: set its fields (Dir, Env, Stdout, Timeout…),
// then call its Run, Output, CombinedOutput or Start. Name is the
// executable, not a shell line: use Command("sh", "-c", line) for shell
// syntax. The command runs in the sandbox's current session, which is
// resumed first when it has stopped (see WithAutoResume).
func (s *Sandbox) Command(name string, args ...string) *command.Cmd {
	return bindCmd(&command.Cmd{Name: name, Args: args}, s.conn, nil)
}

// run runs cmd attached in the sandbox, as cmd.Run would had Command made
// it.
func (s *Sandbox) run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if cmd == nil {
		return nil, (*command.Cmd)(nil).Validate()
	}
	return bindCmd(cmd, s.conn, nil).Run(ctx)
}

// Attach returns a handle to a command of this sandbox's current session.
func (s *Sandbox) Attach(commandID string) (*command.Handle, error) {
	return attachCmd(s.conn, command.Ref{SandboxName: s.name, SessionID: s.SessionID(), CommandID: commandID})
}

// Attach returns a handle to the command ref names, for example one
// started by another process and stored as text (see command.ParseRef).
func (c *Client) Attach(ref command.Ref) (*command.Handle, error) {
	return attachCmd(&conn.Conn{Core: c.core, SandboxName: ref.SandboxName, Reattach: c.reattach}, ref)
}

// ListSessionCommands iterates over the commands of a session, by id, in
// the order they started; a running command has a nil ExitCode. Attach
// (with a command.Ref) follows one. Hosted Vercel answers ErrGone once the
// session has stopped: list a session's commands while it runs.
func (c *Client) ListSessionCommands(ctx context.Context, sessionID string) iter.Seq2[command.Info, error] {
	return func(yield func(command.Info, error) bool) {
		if err := validateID("sessionID", sessionID); err != nil {
			yield(command.Info{}, err)
			return
		}
		call := &httpcore.Call{Method: "GET", Path: sessionPath(sessionID) + "/cmd", Query: url.Values{},
			Op: "list commands", SessionID: sessionID}
		for w, err := range pages(ctx, c, call, func(r *wire.ListCommandsResponse) ([]wire.Command, *string) {
			if r.Pagination == nil {
				return r.Commands, nil
			}
			return r.Commands, r.Pagination.Next
		}) {
			if err != nil {
				yield(command.Info{}, err)
				return
			}
			if !yield(commandInfo(&w), nil) {
				return
			}
		}
	}
}

// Commands iterates over the commands of the sandbox's current session,
// as ListSessionCommands does. It does not resume a stopped session,
// whose commands a new session would not have.
func (s *Sandbox) Commands(ctx context.Context) iter.Seq2[command.Info, error] {
	return s.c.ListSessionCommands(ctx, s.SessionID())
}
