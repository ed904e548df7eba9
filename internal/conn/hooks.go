package conn

// Hooks that package command sets when it is initialised, so that package
// sandbox can bind a command to its sandbox without command exporting a
// function that takes a *Conn, which no user could call. Package grpc-go's
// internal package bridges its public packages the same way. Their types
// name command's types, which this package cannot import: the caller
// asserts them.
var (
	// BindCmd binds a command to the sandbox a Conn reaches, and returns
	// it. Its type is
	//
	//	func(cmd *command.Cmd, c *Conn, as func(*command.Cmd) (name string, args []string, env map[string]string, dir string)) *command.Cmd
	//
	// where as, when not nil, rewrites the command before it is sent
	// (sandbox.User runs it through sudo).
	BindCmd any
	// AttachCmd returns a handle to the command a Ref names, over a Conn,
	// without I/O. Its type is
	//
	//	func(c *Conn, ref command.Ref) (*command.Handle, error)
	AttachCmd any
	// CommandInfo converts a command as the API reports it. Its type is
	//
	//	func(w *wire.Command) command.Info
	CommandInfo any
)
