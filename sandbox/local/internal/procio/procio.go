// Package procio is the plumbing that the local executors share around a
// host process: one pump per output pipe, writers that stdout and stderr
// may share, a bounded wait for pipes that a stray process keeps open, the
// environment as a list, a command that failed before it started, and
// pseudo-terminals whose master side the runtime poller manages.
package procio

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"time"
)

// DefaultWaitDelay bounds how long Drain waits for output pipes that stay
// open after the process group was killed.
const DefaultWaitDelay = time.Second

// Writers returns writers to stdout and stderr serialised by one lock, so
// that both may be the same writer. A nil writer discards.
func Writers(stdout, stderr io.Writer) (io.Writer, io.Writer) {
	mu := &sync.Mutex{}
	return &lockedWriter{mu: mu, w: orDiscard(stdout)}, &lockedWriter{mu: mu, w: orDiscard(stderr)}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Pump copies r to w one read at a time until r ends, so output reaches
// w as soon as the process writes it. When w fails, the rest is read and
// dropped, so that the process never blocks on a full pipe. Its buffer
// starts small and grows to pumpBuffer at the first read that fills it: a
// command that prints little (a server waiting, a sleep) holds 1 KiB, not
// 32, for as long as it runs.
func Pump(r io.Reader, w io.Writer, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, pumpStart)
	writeOK := true
	for {
		n, err := r.Read(buf)
		if n > 0 && writeOK {
			if _, werr := w.Write(buf[:n]); werr != nil {
				writeOK = false
			}
		}
		if err != nil {
			return
		}
		if n == len(buf) && len(buf) < pumpBuffer {
			buf = make([]byte, pumpBuffer)
		}
	}
}

// pumpStart and pumpBuffer are the first and the largest buffer of a
// Pump: one read, one frame of output.
const (
	pumpStart  = 1 << 10
	pumpBuffer = 32 << 10
)

// Drain waits until the pumps of both output pipes are done, or until
// delay has passed with nothing left unread in the pipes; then it closes the
// read ends, which unblocks the pumps (output written later is lost), and
// waits for them to finish. Output already in a pipe is never dropped for
// the delay: on a loaded machine a pump may not run for longer than that,
// and the output of a command that has exited waits in the pipe for it.
// Drain gives up on unread output only after drainBound, in case a process
// outside the command's group keeps writing.
func Drain(outR, errR *os.File, outDone, errDone <-chan struct{}, delay time.Duration) {
	t := time.NewTimer(delay)
	defer t.Stop()
	deadline := time.Now().Add(max(drainBound, delay))
	out, errc := outDone, errDone
	for out != nil || errc != nil {
		select {
		case <-out:
			out = nil
		case <-errc:
			errc = nil
		case <-t.C:
			if time.Now().Before(deadline) && (out != nil && unread(outR) || errc != nil && unread(errR)) {
				t.Reset(drainPoll)
				continue
			}
			out, errc = nil, nil
		}
	}
	outR.Close()
	errR.Close()
	<-outDone
	<-errDone
}

// drainBound is how long Drain waits, at most, for a pump to read the
// output left in its pipe.
const drainBound = time.Minute

// drainPoll is how often Drain looks again at output left in a pipe.
const drainPoll = 10 * time.Millisecond

// EnvList returns env as sorted KEY=value entries.
func EnvList(env map[string]string) []string {
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

// Exited is a command that failed before it could start, as a shell
// reports it: a message on standard error and an exit code. The message is
// written when Wait is called, so that Start never writes.
type Exited struct {
	Code   int       // the exit code
	Msg    string    // the message, ending with a newline
	Stderr io.Writer // where Msg goes
}

// Signal does nothing: the command has ended.
func (p *Exited) Signal(sig int) error {
	if sig < 0 {
		return fmt.Errorf("invalid signal %d", sig)
	}
	return nil
}

// Wait writes the message and returns the exit code.
func (p *Exited) Wait() (int, error) {
	if p.Msg != "" {
		_, _ = io.WriteString(p.Stderr, p.Msg)
	}
	return p.Code, nil
}

// ErrTTYEnded is what input to a terminal whose command has ended, or
// never started, gets.
var ErrTTYEnded = errors.New("the command has ended")

// NoTerminal stands for the terminal of a command that failed before it
// could start (an Exited): there is none, so Write and Resize fail.
type NoTerminal struct{}

// Write fails: there is no terminal.
func (NoTerminal) Write([]byte) (int, error) { return 0, ErrTTYEnded }

// Resize fails: there is no terminal.
func (NoTerminal) Resize(int, int) error { return ErrTTYEnded }

// Pipes opens the two pipes of a child's standard output and error: the
// read ends are the parent's, the write ends the child's.
func Pipes() (outR, outW, errR, errW *os.File, err error) {
	outR, outW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err = os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return outR, outW, errR, errW, nil
}
