//go:build unix

package pty_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// newSandbox starts a local server whose commands are host processes on
// real terminals, and creates a sandbox on it.
func newSandbox(t *testing.T, opts ...sandbox.Option) (*sandboxtest.Server, *sandbox.Sandbox) {
	t.Helper()
	return newSandboxOn(t, []local.Option{local.WithExecutor(hostexec.New()), local.WithHostPaths(true)}, opts...)
}

// newSandboxOn starts a local server with srvOpts and creates a sandbox on
// it.
func newSandboxOn(t *testing.T, srvOpts []local.Option, opts ...sandbox.Option) (*sandboxtest.Server, *sandbox.Sandbox) {
	t.Helper()
	srv := sandboxtest.NewServer(t, srvOpts...)
	sb, err := srv.Client(opts...).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	return srv, sb
}

func TestShellTypeResizeExit(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	typeResizeExit(t, sb)
}

// typeResizeExit runs the default shell on a terminal of sb: what is
// typed runs, the size given at the start and a new one show inside, and
// the shell's exit code comes back.
func typeResizeExit(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	tm := start(t, t.Context(), sb, &pty.Cmd{Rows: 30, Cols: 90})

	tm.typeIn("stty size\n")
	tm.waitFor("30 90\r\n", 1) // the size asked for at start

	tm.typeIn("echo hi\n")
	tm.waitFor("hi\r\n", 2) // the typed line, echoed, then the output

	require.NoError(t, tm.s.Resize(40, 100))
	tm.typeIn("stty size\n")
	tm.waitFor("40 100\r\n", 1) // the shell sees the new size

	tm.typeIn("exit 7\n")
	code, err := tm.wait()
	require.NoError(t, err)
	assert.Equal(t, 7, code, "the shell's own exit code; screen:\n%s", tm.screen)
}

func TestCommandOnTerminal(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	out := newScreen()
	code, err := pty.Run(t.Context(), sb, &pty.Cmd{
		Name:   "sh",
		Args:   []string{"-c", `test -t 0 && test -t 1 && echo "on a terminal"; echo "TERM=$TERM GREETING=$GREETING"; pwd; exit 3`},
		Env:    map[string]string{"GREETING": "hello"},
		Stdout: out,
	})
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	assert.Contains(t, out.String(), "on a terminal\r\n", "standard input and output are the terminal")
	assert.Contains(t, out.String(), "TERM=xterm-256color GREETING=hello\r\n", "TERM by default, and the caller's env")
	assert.Contains(t, out.String(), sb.Cwd()+"\r\n", "the sandbox's working directory")
}

func TestCommandNotFoundOnTerminal(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	notFound(t, sb)
}

// notFound runs a command that does not exist on a terminal of sb.
func notFound(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	out := newScreen()
	code, err := pty.Run(t.Context(), sb, &pty.Cmd{Name: "no-such-command-here", Stdout: out})
	require.NoError(t, err)
	assert.Equal(t, 127, code, "as a shell reports it")
	assert.Contains(t, out.String(), "not found")
}

func TestCancelMidSession(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	cancelMidSession(t, sb, "")
}

// cancelMidSession cancels a session of sb that waits for input, then
// stops sb. The command first runs script, if any.
func cancelMidSession(t *testing.T, sb *sandbox.Sandbox, script string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The keyboard is a connection that never sends: its read must be
	// interrupted when the session ends.
	keyboard, keys := net.Pipe()
	defer keys.Close()
	scr := newScreen()
	s, err := pty.Start(ctx, sb, &pty.Cmd{Name: "sh", Args: []string{"-c", script + "echo started; exec cat"}, Stdin: keyboard, Stdout: scr})
	require.NoError(t, err)
	tm := watchSession(t, s, scr)
	tm.waitFor("started\r\n", 1)

	cancel()
	code, err := tm.wait()
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, -1, code, "no invented exit code")
	_, err = io.WriteString(s, "late\n")
	require.ErrorIs(t, err, pty.ErrClosed)
	// The server ended the command: the sandbox stops at once.
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
}

func TestWebSocketCutMidStream(t *testing.T) {
	t.Parallel()
	srv, sb := newSandbox(t)
	ticket, err := sb.OpenInteractive(t.Context())
	require.NoError(t, err)
	u, err := url.Parse(ticket.URL)
	require.NoError(t, err)
	p := newProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	u.Host = p.ln.Addr().String()
	ticket.URL = u.String()

	scr := newScreen()
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{Name: "sh", Args: []string{"-c", "echo streaming; exec cat"}, Stdout: scr})
	require.NoError(t, err)
	tm := watchSession(t, s, scr)
	tm.waitFor("streaming\r\n", 1)

	p.cut()
	code, err := tm.wait()
	require.ErrorIs(t, err, pty.ErrStreamEnded, "the connection ended before the exit frame")
	require.ErrorIs(t, err, sandbox.ErrStreamEnded, "the same sentinel as the rest of the library")
	var de *pty.DisconnectError
	require.ErrorAs(t, err, &de)
	assert.Zero(t, de.CloseStatus, "no close frame came")
	assert.Equal(t, -1, code, "no invented exit code")
}

func TestTicketOpensOneConnection(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	ticket, err := sb.OpenInteractive(t.Context())
	require.NoError(t, err)
	assert.NotContains(t, fmt.Sprint(ticket), ticket.Token)
	assert.NotContains(t, fmt.Sprintf("%+v %#v", ticket, ticket), ticket.Token)

	code, err := runTicket(t, ticket)
	require.NoError(t, err)
	assert.Zero(t, code)

	_, err = runTicket(t, ticket)
	var de *pty.DialError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 403, de.StatusCode)
	assert.ErrorIs(t, err, sandbox.ErrForbidden)
	assert.NotContains(t, err.Error(), ticket.Token, "the token never shows in an error")
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		assert.NotContains(t, e.Error(), ticket.Token)
	}
}

func runTicket(t *testing.T, ticket sandbox.Interactive) (int, error) {
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{Name: "true"})
	if err != nil {
		return -1, err
	}
	return s.Wait()
}

func TestStoppedSessionRefusesTicket(t *testing.T) {
	t.Parallel()
	_, sb := newSandbox(t)
	ticket, err := sb.OpenInteractive(t.Context())
	require.NoError(t, err)
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
	_, err = pty.Dial(t.Context(), ticket, &pty.Cmd{})
	assert.ErrorIs(t, err, sandbox.ErrGone)
}
