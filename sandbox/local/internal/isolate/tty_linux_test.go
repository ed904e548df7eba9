package isolate

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTerminalCommandLine(t *testing.T) {
	e := &Engine{path: "bwrap"}
	// A host name and arguments that look like the option at stake.
	spec := &Spec{Path: "/usr/bin/echo", Args: []string{"--", "--new-session"}, Cwd: "/", Hostname: "--new-session"}
	spec.UseTerminal()
	argv := append([]string{e.path}, e.args(spec, nil, staged{})...)
	c := &exec.Cmd{Args: argv, SysProcAttr: &syscall.SysProcAttr{}}
	Options{}.onTerminal(c)
	assert.Equal(t, argv, c.Args, "without a terminal, bwrap's command line as it is")

	Options{TTY: os.Stdin}.onTerminal(c)
	assert.Len(t, c.Args, len(argv)-1)
	assert.Less(t, slices.Index(argv, "--new-session"), slices.Index(argv, "--hostname"), "the option comes before any value a client chose")
	cmdline := strings.Join(c.Args, " ")
	assert.Contains(t, cmdline, "--hostname --new-session ", "the host name stays")
	want := " -- /usr/bin/echo -- --new-session"
	if s := setsidPath(); s != "" {
		want = " -- " + s + " -c /usr/bin/echo -- --new-session"
	}
	assert.True(t, strings.HasSuffix(cmdline, want), "%q: the command, in a session of its own on the terminal", cmdline)
	assert.Equal(t, setsidPath() == "", c.SysProcAttr.Setctty, "bwrap takes the terminal only without setsid(1)")
	assert.True(t, c.SysProcAttr.Setsid)
	assert.Equal(t, os.Stdin, c.Stdin)
}
