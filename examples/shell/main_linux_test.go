package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// An interactive session on a terminal of the test's own: keys typed on
// it reach the sandbox's shell, and the terminal comes back as it was.
func TestInteractiveRestoresTheTerminal(t *testing.T) {
	t.Parallel()
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	defer tty.Close()
	require.NoError(t, pty.Setsize(master, &pty.Winsize{Rows: 30, Cols: 100}))
	go func() { _, _ = io.Copy(io.Discard, master) }() // the local echo, if any
	before, err := term.GetState(int(tty.Fd()))
	require.NoError(t, err)

	_, err = master.Write([]byte("stty size; exit 5\r"))
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	code, err := run(t.Context(), tty, &out, &errOut, true)
	require.NoError(t, err, errOut.String())
	assert.Equal(t, 5, code, "the shell's exit code")
	assert.Contains(t, out.String(), "30 100\r\n", "the sandbox's terminal has this terminal's size")

	after, err := term.GetState(int(tty.Fd()))
	require.NoError(t, err)
	assert.Equal(t, before, after, "raw mode is undone")
	flags, err := unix.FcntlInt(tty.Fd(), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.Zero(t, flags&unix.O_NONBLOCK, "the terminal blocks again, as the parent shell expects")
}
