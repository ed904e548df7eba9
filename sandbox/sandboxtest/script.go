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
	"sync/atomic"
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

// Handler decides what a command run by a Script does.
//
// Run writes the command's output to cmd.Stdout and cmd.Stderr (each Write is
// delivered at once, as one chunk) and returns its exit code. ctx is cancelled
// when the process receives SIGKILL or its sandbox session ends; Run must
// return promptly then. signals delivers every signal sent to the process,
// SIGKILL included; pending signals are coalesced when the handler does not
// read them (the channel has a small buffer), much like POSIX signals. A
// handler may ignore any signal but SIGKILL: once SIGKILL is sent the process
// reports 128+9 whatever Run returns.
//
// cmd is the handler's own copy. Its writers serialise writes and fail once
// the process has ended (after Wait returned), so output can never arrive
// after the command completed. A Handler may be called concurrently for
// several commands.
type Handler interface {
	// Run plays one command and returns its exit code.
	Run(ctx context.Context, cmd *local.Cmd, signals <-chan int) (exitCode int)
}

// HandlerFunc adapts a function to the Handler interface. It is the escape
// hatch for behaviour that Reply and Steps cannot express.
type HandlerFunc func(ctx context.Context, cmd *local.Cmd, signals <-chan int) (exitCode int)

// Run calls f(ctx, cmd, signals).
func (f HandlerFunc) Run(ctx context.Context, cmd *local.Cmd, signals <-chan int) int {
	return f(ctx, cmd, signals)
}

// Reply is a Handler that writes Stdout, then Stderr (each as one chunk,
// skipped when empty) and exits with ExitCode at once.
type Reply struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// Run implements Handler.
func (r Reply) Run(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
	if r.Stdout != "" {
		_, _ = io.WriteString(cmd.Stdout, r.Stdout)
	}
	if r.Stderr != "" {
		_, _ = io.WriteString(cmd.Stderr, r.Stderr)
	}
	return r.ExitCode
}

// Steps is a Handler that plays a scripted sequence of output, pauses and an
// exit code, so that tests can observe streaming and provoke timeouts. Build
// it by chaining methods on the zero value; each method returns a new Steps and
// leaves its receiver unchanged, so a Steps value may be shared:
//
//	sandboxtest.Steps{}.Stdout("building\n").Sleep(time.Second).Stderr("failed\n").Exit(2)
//
// Without an Exit step the process exits with 0.
//
// Signals end the sequence like the default action of a real process: a
// signal received before a step, or during Sleep, Await or Block, ends the
// process with exit code 128+signal. Signals whose default action is to be
// ignored or to stop the process (SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP,
// SIGTTIN, SIGTTOU, SIGURG, SIGWINCH) are ignored, as are those listed with
// Ignore. SIGKILL and the end of the session always end it.
type Steps struct {
	steps  []scriptStep
	ignore []int
}

type scriptStepKind int

const (
	scriptStepStdout scriptStepKind = iota
	scriptStepStderr
	scriptStepSleep
	scriptStepAwait
	scriptStepExit
)

type scriptStep struct {
	kind  scriptStepKind
	data  string
	delay time.Duration
	ch    <-chan struct{}
	code  int
}

func (s Steps) with(st scriptStep) Steps {
	s.steps = append(slices.Clip(s.steps), st)
	return s
}

// Stdout adds a step that writes data to standard output as one chunk.
func (s Steps) Stdout(data string) Steps {
	return s.with(scriptStep{kind: scriptStepStdout, data: data})
}

// Stderr adds a step that writes data to standard error as one chunk.
func (s Steps) Stderr(data string) Steps {
	return s.with(scriptStep{kind: scriptStepStderr, data: data})
}

// Sleep adds a pause of d. A signal that ends the process ends the pause.
func (s Steps) Sleep(d time.Duration) Steps {
	return s.with(scriptStep{kind: scriptStepSleep, delay: d})
}

// Await adds a step that waits until ch is closed (or receives a value), so
// that a test decides exactly when the process continues. A signal that ends
// the process ends the wait.
func (s Steps) Await(ch <-chan struct{}) Steps {
	return s.with(scriptStep{kind: scriptStepAwait, ch: ch})
}

// Block adds a step that waits until the process is ended by a signal or by
// the end of its session: a command that never finishes on its own.
func (s Steps) Block() Steps {
	return s.with(scriptStep{kind: scriptStepAwait, ch: nil})
}

// Exit adds the final step: the process exits with code. Steps after it are
// never run.
func (s Steps) Exit(code int) Steps {
	return s.with(scriptStep{kind: scriptStepExit, code: code})
}

// Ignore makes the sequence ignore the given signals, like a process that
// traps them (for example SIGTERM, to test escalation to SIGKILL). SIGKILL
// cannot be ignored.
func (s Steps) Ignore(signals ...int) Steps {
	s.ignore = append(slices.Clip(s.ignore), signals...)
	return s
}

// terminates reports whether sig ends the sequence.
func (s Steps) terminates(sig int) bool {
	if sig == execSIGKILL {
		return true
	}
	switch sig {
	case 0, 17, 18, 19, 20, 21, 22, 23, 28:
		// null signal, SIGCHLD, SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU,
		// SIGURG, SIGWINCH: default action is not to terminate.
		return false
	}
	return !slices.Contains(s.ignore, sig)
}

// Run implements Handler.
func (s Steps) Run(ctx context.Context, cmd *local.Cmd, signals <-chan int) int {
	for _, st := range s.steps {
		if code, ended := s.pending(ctx, signals); ended {
			return code
		}
		switch st.kind {
		case scriptStepStdout:
			if st.data != "" {
				_, _ = io.WriteString(cmd.Stdout, st.data)
			}
		case scriptStepStderr:
			if st.data != "" {
				_, _ = io.WriteString(cmd.Stderr, st.data)
			}
		case scriptStepSleep:
			t := time.NewTimer(st.delay)
			code, ended := scriptStepsWait(ctx, s, signals, t.C)
			t.Stop()
			if ended {
				return code
			}
		case scriptStepAwait:
			if code, ended := scriptStepsWait(ctx, s, signals, st.ch); ended {
				return code
			}
		case scriptStepExit:
			return st.code
		}
	}
	if code, ended := s.pending(ctx, signals); ended {
		return code
	}
	return 0
}

// pending handles the signals received so far without blocking.
func (s Steps) pending(ctx context.Context, signals <-chan int) (int, bool) {
	if ctx.Err() != nil {
		return 128 + execSIGKILL, true
	}
	for {
		select {
		case sig := <-signals:
			if s.terminates(sig) {
				return 128 + sig, true
			}
		default:
			return 0, false
		}
	}
}

// scriptStepsWait blocks until ch yields a value or is closed, or until the
// process is ended. A nil ch blocks until the process is ended.
func scriptStepsWait[T any](ctx context.Context, s Steps, signals <-chan int, ch <-chan T) (int, bool) {
	for {
		select {
		case <-ch:
			return 0, false
		case <-ctx.Done():
			return 128 + execSIGKILL, true
		case sig := <-signals:
			if s.terminates(sig) {
				return 128 + sig, true
			}
		}
	}
}

// EchoHandler returns a Handler that behaves like echo(1): it writes its
// arguments separated by spaces and followed by a newline (no newline when
// the first argument is -n) and exits with 0.
func EchoHandler() Handler {
	return HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		args := cmd.Args
		nl := "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, nl = args[1:], ""
		}
		if out := strings.Join(args, " ") + nl; out != "" {
			_, _ = io.WriteString(cmd.Stdout, out)
		}
		return 0
	})
}

// EnvHandler returns a Handler that behaves like env(1) without arguments:
// it writes the command's environment (Cmd.Env) as sorted KEY=value lines
// and exits with 0.
func EnvHandler() Handler {
	return HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
			fmt.Fprintf(&b, "%s=%s\n", k, cmd.Env[k])
		}
		if b.Len() > 0 {
			_, _ = io.WriteString(cmd.Stdout, b.String())
		}
		return 0
	})
}

// Sequence returns a Handler that hands the n-th command it runs to
// handlers[n], and every command after the last to the last handler. Use it
// for "fails the first time, succeeds the second". It panics when handlers
// is empty.
func Sequence(handlers ...Handler) Handler {
	if len(handlers) == 0 {
		panic("sandboxtest: Sequence needs at least one handler")
	}
	hs := slices.Clone(handlers)
	var n atomic.Int64
	return HandlerFunc(func(ctx context.Context, cmd *local.Cmd, signals <-chan int) int {
		i := min(n.Add(1)-1, int64(len(hs)-1))
		return hs[i].Run(ctx, cmd, signals)
	})
}

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
// Call.CommandLine.
func MatchRegexp(re *regexp.Regexp) Matcher {
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
// with Handle, in registration order; then the fallback (see ScriptFallback).
// A command that nothing matches fails with exit code 127 and a message on
// standard error, and is listed by Unmatched.
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
