package command_test

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
)

// The bridge package sandbox uses, which the tests use to bind commands to
// a fake API.
var (
	bindCmd   = conn.BindCmd.(func(*command.Cmd, *conn.Conn, func(*command.Cmd) (string, []string, map[string]string, string)) *command.Cmd)
	attachCmd = conn.AttachCmd.(func(*conn.Conn, command.Ref) (*command.Handle, error))
)

// run runs cmd on c, as (*sandbox.Sandbox).Command(...).Run would.
func run(ctx context.Context, c *conn.Conn, cmd *command.Cmd) (*command.Result, error) {
	return bindCmd(cmd, c, nil).Run(ctx)
}
