package pty_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// screen is what a terminal shows: the output so far, and a signal on
// each change.
type screen struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newScreen() *screen { return &screen{changed: make(chan struct{})} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// snapshot returns the output so far and a channel closed on the next
// change.
func (s *screen) snapshot() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String(), s.changed
}

func (s *screen) String() string { out, _ := s.snapshot(); return out }

// term is a session under test, waited for in the background so that a
// test can tell a session that ended from one that is slow.
type term struct {
	t      *testing.T
	s      *pty.Session
	screen *screen
	done   chan struct{}
	code   int
	err    error
}

func start(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, cmd *pty.Cmd) *term {
	t.Helper()
	scr := newScreen()
	cmd.Stdout = scr
	s, err := pty.Start(ctx, sb, cmd)
	require.NoError(t, err)
	return watchSession(t, s, scr)
}

func watchSession(t *testing.T, s *pty.Session, scr *screen) *term {
	tm := &term{t: t, s: s, screen: scr, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		tm.code, tm.err = s.Wait()
	}()
	t.Cleanup(func() { _ = s.Close() })
	return tm
}

// typeIn types text on the terminal.
func (tm *term) typeIn(text string) {
	tm.t.Helper()
	_, err := io.WriteString(tm.s, text)
	require.NoError(tm.t, err)
}

// waitFor waits until want shows n times; it fails if the session ends
// first.
func (tm *term) waitFor(want string, n int) {
	tm.t.Helper()
	for {
		out, changed := tm.screen.snapshot()
		if strings.Count(out, want) >= n {
			return
		}
		select {
		case <-changed:
		case <-tm.done:
			out, _ := tm.screen.snapshot()
			if strings.Count(out, want) >= n {
				return
			}
			tm.t.Fatalf("the session ended (code %d, %v) before %q showed %d times; screen:\n%q", tm.code, tm.err, want, n, out)
		}
	}
}

// wait returns how the session ended.
func (tm *term) wait() (int, error) {
	<-tm.done
	return tm.code, tm.err
}

// proxy forwards TCP connections to target until cut or frozen.
type proxy struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if p.frozen.Load() {
			if err != nil {
				return // dst is left open: a frozen network tells nothing
			}
			continue
		}
		if _, werr := dst.Write(buf[:n]); werr != nil || err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// freeze drops all traffic from now on and closes nothing, as a network
// that loses every packet: neither end learns that the other went away.
func (p *proxy) freeze() { p.frozen.Store(true) }

// cut closes every connection, as a network failure would.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
