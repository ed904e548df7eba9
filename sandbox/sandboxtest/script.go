package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// execSIGKILL is the POSIX number of SIGKILL, which no process can ignore.
const execSIGKILL = 9

// defaultScriptKillGrace is how long a killed scripted process may take to return
// before Wait gives up on it.
const defaultScriptKillGrace = 2 * time.Second

// errScriptProcessEnded is returned by the writers of a scripted process once the
// process has ended: its output is complete and later writes are dropped.
var errScriptProcessEnded = errors.New("sandboxtest: write after the process ended")

// Matcher selects the commands a Script handler applies to. Any function
// func(*local.Cmd) bool converts to a Matcher; it must not modify the command.
type Matcher func(cmd *local.Cmd) bool

// MatchName matches commands whose Name equals name exactly (no PATH lookup:
// "echo" does not match "/bin/echo").
func MatchName(name string) Matcher {
	return func(cmd *local.Cmd) bool { return cmd.Name == name }
}

// MatchArgs matches commands whose Name equals name and whose Args equal args
// exactly.
func MatchArgs(name string, args ...string) Matcher {
	args = slices.Clone(args)
	return func(cmd *local.Cmd) bool { return cmd.Name == name && slices.Equal(cmd.Args, args) }
}

// MatchRegexp matches commands whose command line matches re. The command
// line is Name and Args joined by single spaces, without quoting; see
// Call.CommandLine. A nil re panics at once, as a nil handler does in
// Script.Handle.
func MatchRegexp(re *regexp.Regexp) Matcher {
	if re == nil {
		panic("sandboxtest: MatchRegexp needs a regular expression")
	}
	return func(cmd *local.Cmd) bool { return re.MatchString(joinCommandLine(cmd.Name, cmd.Args)) }
}

func joinCommandLine(name string, args []string) string {
	return strings.Join(append([]string{name}, args...), " ")
}

// Call records one command started by a Script.
type Call struct {
	SandboxName string
	SessionID   string
	CommandID   string
	Name        string
	Args        []string
	Env         map[string]string
	Cwd         string
	Sudo        bool
	// Matched is false when no handler matched and the command failed
	// with exit code 127.
	Matched bool
}

// CommandLine returns Name and Args joined by single spaces, without quoting.
func (c Call) CommandLine() string { return joinCommandLine(c.Name, c.Args) }

// ScriptOption configures a Script made by NewScript.
type ScriptOption func(*Script)

// ScriptFallback sets the handler for commands that no registered handler
// matches. Such commands then count as matched.
func ScriptFallback(h Handler) ScriptOption {
	return func(s *Script) { s.fallback = h }
}

// ScriptKillGrace sets how long Wait waits for a handler to return once its
// process was sent SIGKILL or its session ended (default 2s). After that Wait
// reports 128+9 anyway and later writes of the handler are dropped; the
// handler's goroutine is then leaked until it returns.
func ScriptKillGrace(d time.Duration) ScriptOption {
	return func(s *Script) { s.killGrace = d }
}

// Script is an Executor whose commands are played by handlers registered in
// advance, for tests that need exact control of output, exit codes and
// timing. No process is started.
//
// A command goes to the first handler whose Matcher accepts it: handlers
// registered with Override come first, newest first; then handlers registered
// with Handle, in registration order; then the file tools; then the fallback
// (see ScriptFallback). A command that nothing matches fails with exit code
// 127 and a message on standard error, and is listed by Unmatched.
//
// The file tools play the commands that the file calls of package sandbox
// run (Stat, Lstat, ReadDir, Walk, Readlink, MkdirTemp, Remove, RemoveAll,
// Rename, Chmod, Chown, Symlink, DirFS): find -printf, mktemp -d, rm, mv,
// chmod, chown and ln -s, in exactly the form that package gives them,
// on the sandbox's own directory (local.Cmd.Dir), with the exit codes
// and messages of GNU coreutils and findutils. So those calls work on
// what a test uploaded without being scripted, on any host; a handler
// registered for the same command wins.
//
// A Script is safe for concurrent use; handlers may be added while commands
// run. The zero value is ready to use.
type Script struct {
	mu        sync.Mutex
	rules     []scriptRule // Handle, in order
	overrides []scriptRule // Override, oldest first
	nextID    uint64
	fallback  Handler
	killGrace time.Duration
	calls     []Call
}

type scriptRule struct {
	id      uint64
	match   Matcher
	handler Handler
}

// NewScript returns an empty Script configured by opts.
func NewScript(opts ...ScriptOption) *Script {
	s := &Script{}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *Script) rule(m Matcher, h Handler) scriptRule {
	if m == nil || h == nil {
		panic("sandboxtest: Script handler and matcher must not be nil")
	}
	s.nextID++
	return scriptRule{id: s.nextID, match: m, handler: h}
}

// Handle registers h for the commands m matches, after the handlers
// registered before. It returns s, so that calls can be chained.
func (s *Script) Handle(m Matcher, h Handler) *Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, s.rule(m, h))
	return s
}

// Override registers h for the commands m matches, ahead of every handler
// registered so far (including earlier overrides). It returns a function that
// removes the override again, for use with t.Cleanup.
func (s *Script) Override(m Matcher, h Handler) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rule(m, h)
	s.overrides = append(s.overrides, r)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.overrides = slices.DeleteFunc(s.overrides, func(o scriptRule) bool { return o.id == r.id })
	}
}

// Calls returns every command started so far, in the order they started,
// matched or not. Each start is one entry, so a command run twice appears
// twice.
func (s *Script) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.clone()
	}
	return out
}

// Unmatched returns the commands that no handler matched, in the order they
// started. A test that expects every command to be scripted asserts that it
// is empty.
func (s *Script) Unmatched() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if !c.Matched {
			out = append(out, c.clone())
		}
	}
	return out
}

func (c Call) clone() Call {
	c.Args = slices.Clone(c.Args)
	c.Env = maps.Clone(c.Env)
	return c
}

// lookup finds the handler for cmd and records the call. Matchers run
// without the lock held, so they may use the Script.
func (s *Script) lookup(cmd *local.Cmd) (h Handler, matched bool, registered int) {
	s.mu.Lock()
	candidates := make([]scriptRule, 0, len(s.overrides)+len(s.rules))
	for i := len(s.overrides) - 1; i >= 0; i-- {
		candidates = append(candidates, s.overrides[i])
	}
	candidates = append(candidates, s.rules...)
	fallback := s.fallback
	s.mu.Unlock()

	for _, r := range candidates {
		if r.match(cmd) {
			h = r.handler
			break
		}
	}
	if h == nil {
		h = fileTool(cmd)
	}
	if h == nil && fallback != nil {
		h = fallback
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, Call{
		SandboxName: cmd.SandboxName,
		SessionID:   cmd.SessionID,
		CommandID:   cmd.CommandID,
		Name:        cmd.Name,
		Args:        slices.Clone(cmd.Args),
		Env:         maps.Clone(cmd.Env),
		Cwd:         cmd.Cwd,
		Sudo:        cmd.Sudo,
		Matched:     h != nil,
	})
	return h, h != nil, len(candidates)
}

// Start implements Executor: it finds the handler for cmd and runs it on a
// new goroutine. It fails only when ctx is already done.
func (s *Script) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sandboxtest: session ended before the command started: %w", err)
	}
	h, matched, registered := s.lookup(cmd)
	if !matched {
		h = unmatchedHandler(registered)
	}
	s.mu.Lock()
	grace := s.killGrace
	s.mu.Unlock()
	if grace <= 0 {
		grace = defaultScriptKillGrace
	}
	return startScripted(ctx, cmd, h, grace), nil
}

func unmatchedHandler(registered int) Handler {
	return HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		fmt.Fprintf(cmd.Stderr, "%s: command not found (sandboxtest.Script: no handler matched %q, %d registered)\n",
			cmd.Name, joinCommandLine(cmd.Name, cmd.Args), registered)
		return 127
	})
}

// scriptGate serialises the writes of one scripted process and drops them
// once the process has ended.
type scriptGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *scriptGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

type scriptWriter struct {
	gate *scriptGate
	w    io.Writer
}

func (w scriptWriter) Write(p []byte) (int, error) {
	w.gate.mu.Lock()
	defer w.gate.mu.Unlock()
	if w.gate.closed {
		return 0, errScriptProcessEnded
	}
	if len(p) == 0 {
		return 0, nil
	}
	return w.w.Write(p)
}

// scriptProcess is a running Handler.
type scriptProcess struct {
	session context.Context // the sandbox session
	cancel  context.CancelFunc
	signals chan int
	killed  chan struct{} // closed on SIGKILL
	done    chan struct{} // closed when the handler returns
	gate    *scriptGate
	grace   time.Duration

	mu       sync.Mutex
	returned bool // the handler has returned
	sigkill  bool // SIGKILL arrived before the handler returned
	ended    bool // Wait has returned
	code     int
}

func startScripted(ctx context.Context, cmd *local.Cmd, h Handler, grace time.Duration) *scriptProcess {
	hctx, cancel := context.WithCancel(ctx)
	p := &scriptProcess{
		session: ctx,
		cancel:  cancel,
		signals: make(chan int, 8),
		killed:  make(chan struct{}),
		done:    make(chan struct{}),
		gate:    &scriptGate{},
		grace:   grace,
	}
	c := *cmd
	c.Args = slices.Clone(cmd.Args)
	c.Env = maps.Clone(cmd.Env)
	c.Stdout = scriptWriter{gate: p.gate, w: writerOrDiscard(cmd.Stdout)}
	c.Stderr = scriptWriter{gate: p.gate, w: writerOrDiscard(cmd.Stderr)}
	go func() {
		defer close(p.done)
		code := h.Run(hctx, &c, p.signals)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.returned = true
		switch {
		case p.sigkill:
		case p.session.Err() != nil:
			// The session ended under the handler: the process died with it.
			p.code = 128 + execSIGKILL
		default:
			p.code = code
		}
	}()
	return p
}

func writerOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Signal implements Process.
func (p *scriptProcess) Signal(sig int) error {
	if sig < 0 {
		return fmt.Errorf("sandboxtest: invalid signal %d", sig)
	}
	if sig == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.returned || p.ended {
		return nil
	}
	select {
	case p.signals <- sig:
	default: // coalesced with the pending ones
	}
	if sig == execSIGKILL {
		p.kill()
	}
	return nil
}

// kill marks the process as killed by SIGKILL. Call with p.mu held.
func (p *scriptProcess) kill() {
	if p.returned || p.sigkill {
		return
	}
	p.sigkill = true
	p.code = 128 + execSIGKILL
	close(p.killed)
	p.cancel()
}

// Wait implements Process.
func (p *scriptProcess) Wait() (int, error) {
	select {
	case <-p.done:
	case <-p.killed:
		p.awaitHandler()
	case <-p.session.Done():
		p.mu.Lock()
		p.kill()
		p.mu.Unlock()
		p.awaitHandler()
	}
	p.gate.close()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = true
	return p.code, nil
}

// awaitHandler gives a killed handler the grace period to return.
func (p *scriptProcess) awaitHandler() {
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
}
