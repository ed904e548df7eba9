package pty

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/loopback"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

const (
	defaultName = "sh" // what sandbox connect runs
	defaultRows = 24
	defaultCols = 80
	// defaultTerm is the TERM the CLI sets, so that editors work.
	defaultTerm = "xterm-256color"
	// maxControl bounds a text frame read as a control message; a longer
	// one cannot be one and is copied to the output as it streams.
	maxControl = 4 << 10
	copyBuf    = 32 << 10
	maxSize    = 1<<16 - 1 // a terminal's rows and columns are 16-bit
)

// Cmd describes a command to run on a terminal in a sandbox. Only the
// caller's Stdin is read; nothing is read from the caller's terminal.
type Cmd struct {
	// Name is the executable; empty runs sh, as sandbox connect does.
	Name string
	Args []string
	// Env is added to the sandbox's environment. TERM is xterm-256color
	// unless set here.
	Env map[string]string
	// Cwd is the working directory; empty means the sandbox's (Start) or
	// the server's default (Dial).
	Cwd string
	// Sudo runs the command through sudo, as the CLI does.
	Sudo bool
	// Rows and Cols are the terminal's initial size; zero means 24 by 80.
	Rows, Cols int
	// Stdin is the keyboard. It is copied to the terminal until it ends;
	// its end sends nothing (a terminal has no end of input: send an exit
	// command, or ^D at the start of a line). Wait waits for the copy, as
	// os/exec does. When the session ends a read in progress is
	// interrupted if Stdin has a SetReadDeadline method that works (a
	// net.Conn, an *os.File opened on a terminal, pipe or socket); any
	// other reader holds up Wait until its Read returns. Nil sends no
	// input but what Session.Write sends.
	Stdin io.Reader
	// Stdout receives the terminal's output (standard output and standard
	// error are one stream on a terminal). Nil discards it. A Stdout that
	// blocks holds up the session.
	Stdout io.Writer
	// HTTPClient makes the WebSocket handshake; nil uses
	// http.DefaultClient. It must not add the API's credentials: the
	// ticket's token is the only credential the terminal needs. Its
	// CheckRedirect is not used: a redirect is never followed.
	HTTPClient *http.Client
	// KeepAlive is how often Start (and Run) extend the session's timeout
	// while the terminal is open, as sandbox connect does, so that the
	// session does not stop under the user's fingers: when the terminal
	// opens the timeout grows by twice KeepAlive, then by KeepAlive every
	// KeepAlive until the terminal closes. Zero means 5 minutes, as in the
	// CLI; a negative value turns the extensions off. Dial, which has no
	// sandbox, never extends. See Start.
	KeepAlive time.Duration
}

// Session is a command running on a terminal. Its methods are safe for
// concurrent use.
type Session struct {
	conn   *websocket.Conn
	parent context.Context    // Start's: its end closes the session
	ctx    context.Context    // ends with the session
	cancel context.CancelFunc // ends ctx
	stdout io.Writer

	readDone chan struct{} // the read loop has returned
	inDone   chan struct{} // the copy of Stdin has returned
	inStop   chan struct{} // closed once the end has interrupted Stdin
	stdin    io.Reader
	closing  atomic.Bool
	waitOnce sync.Once

	tok      *tokenText    // hides the ticket's token in errors
	keepDone chan struct{} // the keep-alive has returned

	// Set by the read loop before readDone is closed.
	code   int
	err    error
	outErr error
	// Set by the keep-alive before keepDone is closed: why the
	// extensions failed since the last one that succeeded, if they did.
	keepErr error
}

// Start asks sb for an interactive session, connects to it and starts cmd
// on a new terminal. The session lasts until the command exits, ctx ends
// or Close is called; call Wait (or Close) to release it.
//
// While the terminal is open, Start keeps the sandbox's session from
// reaching its timeout (see Cmd.KeepAlive): it extends the timeout of the
// session the terminal is on, and never resumes a stopped sandbox to do
// so. An extension that fails leaves the terminal open; if the session then
// ends without an exit code, Wait's error says why the extension failed.
func Start(ctx context.Context, sb *sandbox.Sandbox, cmd *Cmd) (*Session, error) {
	if sb == nil {
		return nil, apierr.Invalid("sandbox", "nil")
	}
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	t, err := sb.OpenInteractive(ctx)
	if err != nil {
		return nil, err
	}
	c := *cmd
	if c.Cwd == "" {
		c.Cwd = sb.Cwd()
	}
	if c.KeepAlive < 0 {
		return Dial(ctx, t, &c)
	}
	// The first extension runs as the terminal connects; both are done
	// when Start returns.
	k := &keepAlive{client: sb.Client(), sessionID: sb.SessionID(), every: cmp.Or(c.KeepAlive, defaultKeepAlive)}
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first error
	var wg sync.WaitGroup
	wg.Go(func() { first = k.extend(ectx, 2*k.every) })
	s, err := Dial(ctx, t, &c)
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	s.keepErr = s.tok.err(first)
	s.keepDone = make(chan struct{})
	go s.keepAlive(k)
	return s, nil
}

// Run starts cmd as Start does and waits for it to exit.
func Run(ctx context.Context, sb *sandbox.Sandbox, cmd *Cmd) (exitCode int, err error) {
	s, err := Start(ctx, sb, cmd)
	if err != nil {
		return -1, err
	}
	return s.Wait()
}

// Dial connects to the interactive session of ticket t and starts cmd on
// a new terminal, as Start does.
func Dial(ctx context.Context, t sandbox.Interactive, cmd *Cmd) (*Session, error) {
	if err := cmd.validate(); err != nil {
		return nil, err
	}
	target, shown, err := ticketURL(t)
	if err != nil {
		return nil, err
	}
	tok := newTokenText(t.Token)
	client, own, err := handshakeClient(cmd.HTTPClient, target, t.URL)
	if err != nil {
		return nil, err
	}
	conn, resp, err := websocket.Dial(ctx, target.String(), &websocket.DialOptions{
		HTTPClient:      client,
		CompressionMode: websocket.CompressionDisabled,
	})
	if own != nil {
		own.CloseIdleConnections()
	}
	if err != nil {
		return nil, dialError(shown, tok, resp, err)
	}
	// Output is streamed in bounded chunks and text frames are read to a
	// bound, so messages of any size are safe.
	conn.SetReadLimit(-1)
	frame, err := json.Marshal(cmd.startFrame())
	if err != nil {
		_ = conn.CloseNow()
		return nil, fmt.Errorf("pty: %w", err)
	}
	if err := conn.Write(ctx, websocket.MessageText, frame); err != nil {
		_ = conn.CloseNow()
		return nil, &DisconnectError{Reason: "sending the start frame", Err: tok.err(err)}
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Session{
		conn: conn, parent: ctx, ctx: sctx, cancel: cancel,
		stdout:   cmd.Stdout,
		readDone: make(chan struct{}),
		inDone:   make(chan struct{}),
		inStop:   make(chan struct{}),
		stdin:    cmd.Stdin,
		tok:      tok,
		keepDone: make(chan struct{}),
	}
	close(s.keepDone) // none unless Start starts one
	if s.stdout == nil {
		s.stdout = io.Discard
	}
	// The session's end, whatever causes it, closes the connection and
	// interrupts a read of Stdin.
	context.AfterFunc(sctx, func() {
		defer close(s.inStop)
		_ = conn.CloseNow()
		setReadDeadline(s.stdin, time.Now())
	})
	go s.read()
	if s.stdin == nil {
		close(s.inDone)
	} else {
		go s.copyIn()
	}
	return s, nil
}

func (c *Cmd) validate() error {
	if c == nil {
		return apierr.Invalid("Cmd", "nil")
	}
	if c.Rows < 0 || c.Rows > maxSize || c.Cols < 0 || c.Cols > maxSize {
		return apierr.Invalid("Rows/Cols", "%dx%d is not a terminal size", c.Rows, c.Cols)
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return apierr.Invalid("Env", "invalid name %q", k)
		}
	}
	return nil
}

// startFrame is the first frame: the command, as the CLI sends it.
func (c *Cmd) startFrame() wire.PTYStartFrame {
	name, args := c.Name, slices.Clone(c.Args)
	if name == "" {
		name = defaultName
	}
	if c.Sudo {
		name, args = "sudo", append([]string{name}, args...)
	}
	if args == nil {
		args = []string{}
	}
	env := map[string]string{"TERM": defaultTerm}
	maps.Copy(env, c.Env)
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	rows, cols := c.Rows, c.Cols
	if rows == 0 {
		rows = defaultRows
	}
	if cols == 0 {
		cols = defaultCols
	}
	return wire.PTYStartFrame{Type: wire.PTYStart, Command: name, Args: args, Env: list,
		Cwd: c.Cwd, Cols: cols, Rows: rows}
}

// Write sends p to the terminal as typed input, in frames of at most
// 32 KiB.
func (s *Session) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), copyBuf)]
		if err := s.send(websocket.MessageBinary, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// Resize tells the terminal that its window is now rows by cols; the
// command sees the new size (and SIGWINCH) as on a local terminal.
func (s *Session) Resize(rows, cols int) error {
	if rows <= 0 || rows > maxSize || cols <= 0 || cols > maxSize {
		return apierr.Invalid("Resize", "%dx%d is not a terminal size", rows, cols)
	}
	frame, err := json.Marshal(wire.PTYResizeFrame{Type: wire.PTYResize, Cols: cols, Rows: rows})
	if err != nil {
		return fmt.Errorf("pty: %w", err)
	}
	return s.send(websocket.MessageText, frame)
}

func (s *Session) send(typ websocket.MessageType, p []byte) error {
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	if err := s.conn.Write(s.ctx, typ, p); err != nil {
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		return &DisconnectError{Reason: "sending input", Err: s.tok.err(err)}
	}
	return nil
}

// Wait waits until the command has exited and returns its exit code. It
// returns -1 and an error when the session ended otherwise: ctx's error
// when the context of Start ended, ErrClosed after Close, a
// *DisconnectError when the connection was cut. An error writing to Stdout
// is returned with the exit code. Wait may be called more than once.
func (s *Session) Wait() (exitCode int, err error) {
	<-s.readDone
	s.waitOnce.Do(func() {
		s.cancel()
		<-s.inDone
		<-s.inStop
		<-s.keepDone
		setReadDeadline(s.stdin, time.Time{}) // leave Stdin as it was given
		if s.err == nil && s.outErr != nil {
			s.err = fmt.Errorf("pty: writing output: %w", s.outErr)
		}
		var de *DisconnectError
		if s.keepErr != nil && errors.As(s.err, &de) {
			// The session may have ended because it was not kept alive.
			s.err = errors.Join(s.err, fmt.Errorf("pty: extending the session's timeout: %w", s.keepErr))
		}
	})
	return s.code, s.err
}

// Close ends the session (the server then ends the command) and waits as
// Wait does. Closing a session that has ended does nothing.
func (s *Session) Close() error {
	s.closing.Store(true)
	s.cancel()
	_, _ = s.Wait()
	return nil
}

// setReadDeadline sets a deadline on r when r supports one.
func setReadDeadline(r io.Reader, t time.Time) {
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(t)
	}
}

// copyIn copies Stdin to the terminal until Stdin ends or the session does.
func (s *Session) copyIn() {
	defer close(s.inDone)
	buf := make([]byte, copyBuf)
	for {
		n, err := s.stdin.Read(buf)
		if _, werr := s.Write(buf[:n]); werr != nil {
			return
		}
		if err != nil {
			return
		}
	}
}

// read runs the read loop and records how the session ended.
func (s *Session) read() {
	defer close(s.readDone)
	s.code, s.err = s.readFrames()
	s.cancel()
}

// readFrames copies output until the exit frame and returns its code.
func (s *Session) readFrames() (int, error) {
	buf := make([]byte, copyBuf)
	for {
		typ, r, err := s.conn.Reader(s.ctx)
		if err != nil {
			return -1, s.ended(err)
		}
		if typ == websocket.MessageBinary {
			if err := s.copyOut(r, buf); err != nil {
				return -1, s.ended(err)
			}
			continue
		}
		// A text frame: a control message when short enough, else output.
		n, err := io.ReadFull(r, buf[:maxControl+1])
		switch {
		case err == nil: // longer than any control message
			s.output(buf[:n])
			if err := s.copyOut(r, buf); err != nil {
				return -1, s.ended(err)
			}
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			if code, exited, err := s.control(buf[:n]); exited {
				if err == nil {
					_ = s.conn.Close(websocket.StatusNormalClosure, "")
				}
				return code, err
			}
		default:
			return -1, s.ended(err)
		}
	}
}

// control handles a complete text frame. As in the CLI, a frame that is
// not JSON is output and JSON of an unknown type is ignored.
func (s *Session) control(msg []byte) (code int, exited bool, err error) {
	if !json.Valid(msg) {
		s.output(msg)
		return 0, false, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(msg, &head) != nil || head.Type != wire.PTYExit {
		return 0, false, nil
	}
	var exit wire.PTYExitFrame
	if json.Unmarshal(msg, &exit) != nil || exit.Code == nil {
		return -1, true, &DisconnectError{Reason: "the exit frame has no exit code"}
	}
	return *exit.Code, true, nil
}

// copyOut copies one message to Stdout in bounded chunks.
func (s *Session) copyOut(r io.Reader, buf []byte) error {
	for {
		n, err := r.Read(buf)
		s.output(buf[:n])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// output writes p to Stdout; after a failed write the rest is dropped,
// so that the session still reaches its exit code.
func (s *Session) output(p []byte) {
	if len(p) == 0 || s.outErr != nil {
		return
	}
	if _, err := s.stdout.Write(p); err != nil {
		s.outErr = err
	}
}

// ended explains why the read loop stopped before the exit frame.
func (s *Session) ended(err error) error {
	if s.closing.Load() {
		return ErrClosed
	}
	if cerr := s.parent.Err(); cerr != nil {
		return cerr
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		return &DisconnectError{CloseStatus: int(ce.Code), Reason: bounded(s.tok.hide(ce.Reason))}
	}
	return &DisconnectError{Err: s.tok.err(err)}
}

// bounded cuts a server-chosen text to a readable length.
func bounded(s string) string {
	const limit = 200
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}

// ticketURL checks the ticket and returns the URL to dial, with the token
// and an http or https scheme, and the same URL without its query for
// messages. A ws:// URL carries the token in clear text: it is refused, as
// sandbox.NewClient refuses a plain-HTTP base URL, unless it names the
// local machine (package internal/loopback holds the rule).
func ticketURL(t sandbox.Interactive) (target *url.URL, shown string, err error) {
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, "", apierr.Invalid("Interactive.URL", "not a URL")
	}
	target = new(url.URL)
	*target = *u
	switch u.Scheme {
	case "ws":
		target.Scheme = "http"
	case "wss":
		target.Scheme = "https"
	case "http", "https":
	default:
		return nil, "", apierr.Invalid("Interactive.URL", "scheme %q is not ws or wss", u.Scheme)
	}
	if u.Host == "" {
		return nil, "", apierr.Invalid("Interactive.URL", "no host")
	}
	if err := loopback.Check("Interactive.URL", target); err != nil {
		return nil, "", withScheme(err, u.Scheme)
	}
	if t.Token == "" {
		return nil, "", apierr.Invalid("Interactive.Token", "empty")
	}
	plain := *u
	plain.RawQuery, plain.Fragment, plain.User = "", "", nil
	q := target.Query()
	q.Set("token", t.Token)
	target.RawQuery = q.Encode()
	return target, plain.String(), nil
}

// withScheme names the scheme the caller gave (ws, not http) in an error
// of package internal/loopback.
func withScheme(err error, scheme string) error {
	var ie *apierr.InsecureURLError
	if errors.As(err, &ie) {
		ie.Scheme = scheme
	}
	return err
}

// handshakeClient returns a copy of c (nil: http.DefaultClient) for the
// handshake to target. It never follows a redirect: net/http would send
// the URL, token and all, to the new place as the Referer, and the start
// frame (the command's environment) and the keystrokes would follow. A
// plain URL to the name localhost is dialled at 127.0.0.1 or ::1 without
// a lookup, through a transport of package internal/loopback, which is
// returned as own: the caller closes its idle connections. given is the
// URL as the ticket gave it, for errors.
func handshakeClient(c *http.Client, target *url.URL, given string) (hc *http.Client, own *http.Transport, err error) {
	if c == nil {
		c = http.DefaultClient
	}
	cp := *c
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if loopback.NeedsDialer(target) {
		if own, err = loopback.Transport("Interactive.URL", target, cp.Transport); err != nil {
			scheme, _, _ := strings.Cut(given, ":")
			return nil, nil, withScheme(err, scheme)
		}
		cp.Transport = own
	}
	return &cp, own, nil
}

// dialError describes a failed handshake with the token hidden: net/http
// quotes the URL in its errors, and the WebSocket layer quotes the
// server's headers.
func dialError(shown string, tok *tokenText, resp *http.Response, err error) error {
	de := &DialError{URL: tok.hide(shown)}
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		de.StatusCode = resp.StatusCode
		if loc, lerr := resp.Location(); lerr == nil && resp.StatusCode/100 == 3 {
			de.Location = tok.hide((&url.URL{Scheme: loc.Scheme, Host: loc.Host}).String())
			return de
		}
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // the same failure, without the URL
	}
	de.Err = tok.err(err)
	return de
}
