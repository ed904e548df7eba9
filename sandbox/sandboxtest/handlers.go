package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

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
