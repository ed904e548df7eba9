package isolate

import (
	"os/exec"
	"slices"
)

// A command on a terminal (Options.TTY) is started as any other but for
// its session. bwrap, the leader of a new session, gets the terminal as
// its standard streams and makes it its controlling terminal; the command
// inherits all three and the session, since bwrap is not asked for a new
// session (--new-session would detach the command from the terminal:
// /dev/tty would fail and a shell would have no job control). bwrap also
// shows the terminal at /dev/console so that ttyname works: the sandbox's
// /dev/pts is a devpts instance of its own, without the host's terminals.
//
// What --new-session guards against is TIOCSTI: a command pushing input
// into the terminal of whoever started it, to be read by that user's
// shell once the command ends. A terminal command's terminal is a new,
// private pseudo-terminal that only its own session reads: what the
// command could push there reaches itself, never the server's terminal or
// another sandbox's. Everything else holds as for any command: the
// namespaces, no other inherited descriptor, the rlimits, the control
// group, the seccomp filter, death with the server, and the end of the
// whole PID namespace with the command.

// onTerminal puts c, the bwrap command, on the terminal of o, if any.
func (o Options) onTerminal(c *exec.Cmd) {
	if o.TTY == nil {
		return
	}
	c.Stdin, c.Stdout, c.Stderr = o.TTY, o.TTY, o.TTY
	c.SysProcAttr.Setsid = true
	c.SysProcAttr.Setctty = true
	c.SysProcAttr.Ctty = 0 // standard input, in the child
}

// sessionArgs returns argv, bwrap's command line, for the terminal of o:
// without --new-session among bwrap's own options when there is a
// terminal (the command's arguments, after "--", are left alone).
func (o Options) sessionArgs(argv []string) []string {
	if o.TTY == nil {
		return argv
	}
	end := slices.Index(argv, "--")
	if end < 0 {
		end = len(argv)
	}
	if i := slices.Index(argv[:end], "--new-session"); i >= 0 {
		argv = slices.Delete(slices.Clone(argv), i, i+1)
	}
	return argv
}
