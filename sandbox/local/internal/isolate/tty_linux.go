package isolate

import (
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// A command on a terminal (Options.TTY) is started as any other but for
// its session. bwrap gets the terminal as its standard streams, and the
// command inherits them, but bwrap is not asked for a new session:
// --new-session would leave the command without a controlling terminal
// (/dev/tty would fail, a shell would have no job control). Instead
// setsid(1) -c, the host's, starts the command inside the sandbox as the
// leader of a new session whose controlling terminal is the terminal, so
// that its process groups are visible to it (a shell gives the terminal
// back to the group it found at the start when it exits; one outside the
// sandbox's PID namespace would be invisible and that would fail). bwrap
// itself leads a session of its own on the host without taking the
// terminal. Where setsid(1) cannot take a terminal, bwrap takes it and the
// command runs in bwrap's session. bwrap also shows the terminal at
// /dev/console so that ttyname works: the sandbox's /dev/pts is a devpts
// instance of its own, without the host's terminals.
//
// What --new-session guards against is TIOCSTI: a command pushing input
// into the terminal of whoever started it, to be read by that user's
// shell once the command ends. A terminal command's terminal is a new,
// private pseudo-terminal that only the command's own session reads: what
// the command could push there reaches itself, never the server's
// terminal or another sandbox's. Everything else holds as for any
// command: the namespaces, no other inherited descriptor, the rlimits, the
// control group, the seccomp filter, death with the server, and the end of
// the whole PID namespace with the command.

// setsidPath is a setsid(1) that can make the terminal of its standard
// input its controlling terminal (-c: util-linux's, BusyBox's), at a path
// the sandbox shares with the host; "" when there is none.
var setsidPath = sync.OnceValue(func() string {
	for _, p := range []string{"/usr/bin/setsid", "/bin/setsid"} {
		help, _ := exec.Command(p, "--help").CombinedOutput()
		if h := strings.ToLower(string(help)); strings.Contains(h, "-c") && strings.Contains(h, "controlling terminal") {
			return p
		}
	}
	return ""
})

// UseTerminal prepares s, whose Path is found, for a command on a
// terminal (Options.TTY): setsidPath starts it, if there is one.
func (s *Spec) UseTerminal() {
	if p := setsidPath(); p != "" {
		s.Path, s.Args = p, append([]string{"-c", s.Path}, s.Args...)
	}
}

// onTerminal puts c, the bwrap command, on the terminal of o, if any.
func (o Options) onTerminal(c *exec.Cmd) {
	if o.TTY == nil {
		return
	}
	c.Args = sessionArgs(c.Args)
	c.Stdin, c.Stdout, c.Stderr = o.TTY, o.TTY, o.TTY
	c.SysProcAttr.Setsid = true
	if setsidPath() == "" {
		c.SysProcAttr.Setctty = true
		c.SysProcAttr.Ctty = 0 // standard input, in the child
	}
}

// sessionArgs returns argv, bwrap's command line, without --new-session:
// its first occurrence, which is bwrap's option (it comes before any value
// that a client chose, such as a host name).
func sessionArgs(argv []string) []string {
	if i := slices.Index(argv, "--new-session"); i >= 0 {
		argv = slices.Delete(slices.Clone(argv), i, i+1)
	}
	return argv
}
