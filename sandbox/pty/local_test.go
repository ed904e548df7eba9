//go:build unix

package pty_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

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

// clock is a server's clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// extensions returns the extend-timeout requests srv received.
func extensions(srv *sandboxtest.Server) []local.Request {
	return srv.RequestsTo("POST", "/v2/sandboxes/sessions/*/extend-timeout")
}

// A session whose timeout passes while its terminal is open goes on: Start
// extends it when the terminal opens and every KeepAlive after, as
// sandbox connect does. The server's clock moves only when the test says,
// so the session's end depends on the extensions alone.
func TestKeepAliveOutlivesTheTimeout(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.UnixMilli(1_767_000_000_000)}
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true), local.WithClock(clk.Now))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Timeout: time.Second})
	require.NoError(t, err)

	const every = 10 * time.Millisecond
	tm := start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-c", "echo started; exec cat"}, KeepAlive: every})
	first := extensions(srv)
	require.Len(t, first, 1, "the first extension is made as the terminal opens")
	assert.JSONEq(t, `{"duration":20}`, string(first[0].Body), "twice the interval")
	assert.Equal(t, http.StatusOK, first[0].Status)
	require.Eventually(t, func() bool { return len(extensions(srv)) >= 3 }, 10*time.Second, time.Millisecond,
		"then one every interval")
	for _, r := range extensions(srv)[1:] {
		assert.JSONEq(t, `{"duration":10}`, string(r.Body), "by the interval")
		assert.Contains(t, r.Path, sb.SessionID(), "to the terminal's session")
	}

	clk.advance(time.Second + time.Millisecond) // past the session's first timeout
	sessions := srv.Sessions()                  // which expires what is due
	require.Len(t, sessions, 1)
	assert.Equal(t, "running", sessions[0].Status, "kept alive past its first timeout")
	tm.typeIn("alive\n")
	tm.waitFor("alive\r\n", 2) // echoed, then printed by cat
	tm.typeIn("\x04")          // end of input: cat exits, and the shell it replaced
	code, err := tm.wait()
	require.NoError(t, err)
	assert.Zero(t, code)

	// Wait has joined the keep-alive: nothing extends the session now.
	n := len(extensions(srv))
	assert.Equal(t, "running", srv.Sessions()[0].Status)
	assert.Len(t, extensions(srv), n)
}

// The keep-alive is on by default, with the CLI's interval, and off with
// a negative KeepAlive.
func TestKeepAliveByDefaultAndOff(t *testing.T) {
	t.Parallel()
	srv, sb := newSandbox(t)
	tm := start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-c", "exec cat"}})
	got := extensions(srv)
	require.Len(t, got, 1, "on by default")
	assert.JSONEq(t, `{"duration":600000}`, string(got[0].Body), "twice 5 minutes as the terminal opens")
	require.NoError(t, tm.s.Close())

	tm = start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-c", "exec cat"}, KeepAlive: -1})
	tm.typeIn("typed\n")
	tm.waitFor("typed\r\n", 2)
	require.NoError(t, tm.s.Resize(30, 100))
	require.NoError(t, tm.s.Close())
	assert.Len(t, extensions(srv), 1, "off: no extension")
}

// A keep-alive never resumes a sandbox. Here the network between the
// terminal and the server goes silent and the session stops: the client
// cannot tell, and its next extension meets the stopping or stopped
// session. It stops extending there; the sandbox is not resumed (which a
// call through the Sandbox handle would do: it would then keep the new
// session alive) and no second session starts.
func TestKeepAliveNeverResumes(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	p := newProxy(t, strings.TrimPrefix(srv.URL(), "http://"))
	// The API names the proxy in its tickets: the terminal goes through
	// it, the API's calls do not.
	viaProxy := func(r *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/interactive") {
			r.Host = p.ln.Addr().String()
		}
		return next(r)
	}
	sb, err := srv.Client(sandbox.WithMiddleware(viaProxy)).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	sid := sb.SessionID()
	tm := start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-c", "echo started; exec cat"}, KeepAlive: 10 * time.Millisecond})
	tm.waitFor("started\r\n", 1)

	p.freeze()
	require.NoError(t, srv.Stop(sid))
	refused := func() int {
		n := 0
		for _, r := range extensions(srv) {
			if r.Status == http.StatusGone || r.Status == http.StatusUnprocessableEntity { // stopped, stopping
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return refused() > 0 }, 10*time.Second, time.Millisecond,
		"an extension meets the stopping or stopped session")
	require.NoError(t, tm.s.Close())
	_, err = tm.wait()
	require.ErrorIs(t, err, pty.ErrClosed)

	assert.Equal(t, 1, refused(), "the keep-alive stops at the first refusal")
	for _, r := range extensions(srv) {
		assert.Contains(t, r.Path, sid, "only the terminal's session is extended")
	}
	assert.Len(t, srv.Sessions(), 1, "no session was started")
	assert.Empty(t, srv.RequestsTo("GET", "/v2/sandboxes/*"), "no resume was asked for")
}

// An extension the API refuses leaves the terminal open; when the session
// then stops at its timeout, Wait says why it was not kept alive.
func TestKeepAliveFailureIsReported(t *testing.T) {
	t.Parallel()
	clk := &clock{now: time.UnixMilli(1_767_000_000_000)}
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true),
		local.WithClock(clk.Now), local.WithMaxTimeout(time.Second))
	// The longest timeout the server allows: no extension fits.
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Timeout: time.Second})
	require.NoError(t, err)
	tm := start(t, t.Context(), sb, &pty.Cmd{Name: "sh", Args: []string{"-c", "echo started; exec cat"}, KeepAlive: 10 * time.Millisecond})
	first := extensions(srv)
	require.Len(t, first, 1, "made as the terminal opens")
	assert.Equal(t, http.StatusBadRequest, first[0].Status, "refused")
	tm.waitFor("started\r\n", 1) // and the terminal is open

	clk.advance(time.Second)
	srv.Sessions() // which expires the session, and ends its terminal
	code, err := tm.wait()
	assert.Equal(t, -1, code, "no invented exit code")
	require.ErrorIs(t, err, pty.ErrStreamEnded)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae, "why the session was not kept alive")
	assert.Equal(t, http.StatusBadRequest, ae.StatusCode, "the first refusal, not the 410 that follows it")
	assert.Contains(t, err.Error(), "extending the session's timeout")
}
