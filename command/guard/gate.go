package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/capture"
)

// Target makes the commands a Gate runs. *sandbox.Sandbox and
// *sandbox.User implement it.
type Target interface {
	Command(name string, args ...string) *command.Cmd
}

// Option configures a Gate. A nil Option is ignored.
type Option func(*Gate)

// WithOutput copies the redacted output of every command to w as it
// arrives, stdout and stderr merged line by line (a line longer than 4 KiB
// is passed on in pieces). Writes are serialised across commands.
// A nil w is an *InputError from NewGate.
func WithOutput(w io.Writer) Option {
	return func(r *Gate) {
		if w == nil {
			r.optErr = apierr.Invalid("WithOutput", "nil writer")
			return
		}
		r.live = &lockedWriter{w: w}
	}
}

// Gate runs commands in a sandbox under a Policy: it refuses what the
// policy denies before anything is sent, redacts output as it streams, and
// records a bounded Transcript. It is safe for concurrent use. Create one
// with NewGate: Run and Check refuse a zero or nil Gate.
type Gate struct {
	ex   Target
	c    *compiled
	red  *Redactor
	live io.Writer

	optErr error // an option NewGate refuses

	mu     sync.Mutex
	t      Transcript
	budget int64 // transcript output bytes left
}

// maxArgLen bounds each argument recorded in a transcript.
const maxArgLen = 1 << 10

// NewGate returns a Gate that runs commands through ex (usually a
// *sandbox.Sandbox) under p. When p.Workspace is empty the workspace is
// ex's working directory (ex.Cwd(), as *sandbox.Sandbox reports it), else
// DefaultWorkspace. A malformed policy is an input error.
func NewGate(ex Target, p Policy, opts ...Option) (*Gate, error) {
	if ex == nil {
		return nil, apierr.Invalid("Target", "nil target")
	}
	var cwd string
	if w, ok := ex.(interface{ Cwd() string }); ok {
		cwd = w.Cwd()
	}
	c, err := p.compile(cwd)
	if err != nil {
		return nil, err
	}
	r := &Gate{ex: ex, c: c, red: NewRedactor(p.secrets()...)}
	r.budget = p.MaxTranscript
	if r.budget == 0 {
		r.budget = DefaultMaxTranscript
	}
	r.budget = max(r.budget, 0)
	r.t.Workspace = c.workspace
	for _, o := range opts {
		if o != nil {
			o(r)
		}
	}
	if r.optErr != nil {
		return nil, r.optErr
	}
	return r, nil
}

// Workspace returns the directory commands are confined to.
func (r *Gate) Workspace() string {
	if r.made() != nil {
		return ""
	}
	return r.c.workspace
}

// Redactor returns the redactor the runner applies, to redact other logs
// with the same secrets.
func (r *Gate) Redactor() *Redactor { return r.red }

// Check reports whether cmd may run, as Run would decide, without running
// or recording it.
func (r *Gate) Check(cmd *command.Cmd) error {
	if err := r.made(); err != nil {
		return err
	}
	_, err := r.c.check(cmd, r.red)
	return err
}

// made refuses a nil or zero Gate, which has no compiled policy.
func (r *Gate) made() error {
	if r == nil || r.c == nil {
		return apierr.Invalid("Gate", "not made by NewGate")
	}
	return nil
}

// Transcript returns a copy of the transcript so far.
func (r *Gate) Transcript() Transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.t.clone()
}

// Run checks cmd against the policy and, when it is allowed, runs it
// attached in the workspace (Dir resolved inside it) with the policy's
// environment and timeout. cmd only describes the command (its Name, Args,
// Dir, Env, Sudo, Timeout, InactivityTimeout, Stdout and Stderr): the
// Gate's target makes the command that runs, so cmd need not come from
// Command. The remote command is killed when ctx ends.
//
// A denied command returns a *DeniedError and nothing is sent. Otherwise
// the result holds the exit code and the redacted output (each stream
// bounded by MaxOutputPerCommand, byte counts of the redacted output);
// cmd.Stdout and cmd.Stderr receive the redacted output as it arrives.
// A non-zero exit returns the result and a *command.ExitError; an
// inactivity timeout a *command.InactivityError; both carry only redacted
// output. Other errors have their message redacted and unwrap to the
// original. Every call is recorded in the transcript.
func (r *Gate) Run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if err := r.made(); err != nil {
		return nil, err
	}
	entry := Record{StartedAt: time.Now()}
	if cmd != nil {
		entry.Argv = r.argv(cmd)
	}
	label, err := r.c.check(cmd, r.red)
	if err != nil {
		var de *DeniedError
		if errors.As(err, &de) {
			entry.Denied, entry.Rule, entry.Reason = true, de.Rule, de.Reason
		} else {
			entry.Error = r.red.Redact(err.Error())
		}
		r.add(entry)
		return nil, err
	}
	dir, _ := r.c.dir(cmd.Dir)
	entry.Dir, entry.Rule = dir, label
	idx := r.add(entry)

	perCmd := r.c.p.MaxOutputPerCommand
	if perCmd == 0 {
		perCmd = DefaultMaxOutputPerCommand
	}
	perCmd = max(perCmd, -1)
	out := &runOutput{r: r, limit: max(perCmd, 0), live: r.live,
		stdout: capture.New(int(perCmd)), stderr: capture.New(int(perCmd))}
	stdout := r.red.Writer(&streamSink{o: out, capture: out.stdout, stream: 0, user: cmd.Stdout})
	stderr := r.red.Writer(&streamSink{o: out, capture: out.stderr, stream: 1, user: cmd.Stderr})

	run := r.ex.Command(cmd.Name, cmd.Args...)
	run.Dir = dir
	run.Env = r.env(cmd.Env)
	run.Sudo = cmd.Sudo
	run.Timeout = cmd.Timeout
	if run.Timeout == 0 {
		run.Timeout = r.c.p.CommandTimeout
	}
	run.InactivityTimeout = cmd.InactivityTimeout
	run.Stdout, run.Stderr = stdout, stderr
	run.CaptureLimit = -1 // raw output is never kept; the redacted copy is

	began := time.Now()
	res, runErr := run.Run(ctx)
	closeErr := errors.Join(stdout.Close(), stderr.Close(), out.flush())

	result := out.result(res)
	if res == nil {
		result.Duration = time.Since(began)
	}
	entry.CommandID = result.CommandID
	entry.Duration = Duration(result.Duration)
	var kept int64
	entry.Output, kept, entry.OutputBytes, entry.Truncated = out.transcript()

	err = runErr
	var ee *command.ExitError
	var ie *command.InactivityError
	switch {
	case runErr == nil:
		code := result.ExitCode()
		entry.ExitCode = &code
	case errors.As(runErr, &ee) && res != nil:
		code := result.ExitCode()
		entry.ExitCode = &code
		err = &command.ExitError{Result: result}
	case errors.As(runErr, &ie):
		cp := *ie
		if ie.CommandID != "" {
			result.CommandID = ie.CommandID
			entry.CommandID = ie.CommandID
		}
		cp.Result = result
		err = &cp
		entry.Error = r.red.Redact(err.Error())
		result = nil
	default:
		if msg := r.red.Redact(runErr.Error()); msg != runErr.Error() {
			err = &redactedError{err: runErr, msg: msg}
		}
		entry.Error = r.red.Redact(runErr.Error())
		result = nil
	}
	if err == nil && closeErr != nil {
		err = closeErr
	}
	r.set(idx, entry, kept)
	return result, err
}

func (r *Gate) argv(cmd *command.Cmd) []string {
	argv := make([]string, 0, 1+len(cmd.Args))
	for _, a := range append([]string{cmd.Name}, cmd.Args...) {
		a = r.red.Redact(a)
		if len(a) > maxArgLen {
			a = validPrefix(a[:maxArgLen]) + "…"
		}
		argv = append(argv, a)
	}
	return argv
}

func (r *Gate) env(own map[string]string) map[string]string {
	env := make(map[string]string, len(r.c.p.Env)+len(r.c.p.SecretEnv)+len(own))
	maps.Copy(env, r.c.p.Env)
	maps.Copy(env, own)
	maps.Copy(env, r.c.p.SecretEnv)
	return env
}

func (r *Gate) add(e Record) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.Entries = append(r.t.Entries, e)
	return len(r.t.Entries) - 1
}

func (r *Gate) set(i int, e Record, kept int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.Entries[i] = e
	r.t.OutputBytes += kept
	if e.Truncated {
		r.t.Truncated = true
	}
}

// reserve takes up to n bytes from the transcript budget.
func (r *Gate) reserve(n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, r.budget)
	r.budget -= n
	return n
}

// maxLinePending bounds a partial line waiting for its end before it is
// merged into the interleaved output.
const maxLinePending = 4 << 10

// runOutput collects one command's redacted output. Stdout and stderr are
// merged line by line into the transcript and the live writer, so that a
// stream holding back a possible secret does not let the other one cut
// into its line.
type runOutput struct {
	r       *Gate
	limit   int64
	live    io.Writer
	mu      sync.Mutex
	stdout  *capture.Buffer
	stderr  *capture.Buffer
	partial [2][]byte
	inter   []byte // interleaved, for the transcript
	total   int64
}

func (o *runOutput) write(c *capture.Buffer, stream int, p []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = c.Write(p)
	o.partial[stream] = append(o.partial[stream], p...)
	buf := o.partial[stream]
	n := bytes.LastIndexByte(buf, '\n') + 1
	if n == 0 && len(buf) >= maxLinePending {
		n = len(buf)
	}
	if n == 0 {
		return nil
	}
	err := o.merge(buf[:n])
	o.partial[stream] = append(buf[:0], buf[n:]...)
	return err
}

// flush merges what is left of both streams.
func (o *runOutput) flush() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var err error
	for i := range o.partial {
		if len(o.partial[i]) > 0 {
			err = errors.Join(err, o.merge(o.partial[i]))
			o.partial[i] = nil
		}
	}
	return err
}

func (o *runOutput) merge(p []byte) error {
	o.total += int64(len(p))
	if room := o.limit - int64(len(o.inter)); room > 0 {
		n := o.r.reserve(min(room, int64(len(p))))
		o.inter = append(o.inter, p[:n]...)
	}
	if o.live != nil {
		_, err := o.live.Write(p)
		return err
	}
	return nil
}

// transcript returns the interleaved output, with a marker when cut, the
// number of output bytes kept, and the number produced.
func (o *runOutput) transcript() (out string, kept, total int64, truncated bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if int64(len(o.inter)) == o.total {
		return string(o.inter), o.total, o.total, false
	}
	s := validPrefix(string(o.inter))
	return s + TruncationMarker(o.total-int64(len(s))), int64(len(s)), o.total, true
}

func (o *runOutput) result(res *command.Result) *command.Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := &command.Result{} // exit code -1, unknown
	if res != nil {
		*out = *res // the ids, times and exit code
	}
	out.Stdout, out.Stderr = o.stdout.Bytes(), o.stderr.Bytes()
	out.StdoutBytes, out.StderrBytes = o.stdout.Total(), o.stderr.Total()
	out.StdoutTruncated, out.StderrTruncated = o.stdout.Truncated(), o.stderr.Truncated()
	return out
}

// streamSink receives one redacted stream.
type streamSink struct {
	o       *runOutput
	capture *capture.Buffer
	stream  int
	user    io.Writer
}

func (s *streamSink) Write(p []byte) (int, error) {
	if err := s.o.write(s.capture, s.stream, p); err != nil {
		return 0, err
	}
	if s.user != nil {
		if _, err := s.user.Write(p); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// validPrefix drops an incomplete UTF-8 sequence at the end of s.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0; i++ {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			return s
		}
		s = s[:len(s)-1]
	}
	return s
}

// redactedError carries an error whose message held a secret.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
