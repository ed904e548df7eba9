//go:build unix

package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

const localSupported = true

// localBusyRetries is how often Start retries an executable that is
// momentarily busy (ETXTBSY).
const localBusyRetries = 20

var errLocalUnsupported error

// localProcess is a running process group.
type localProcess struct {
	cmd       *exec.Cmd
	pgid      int
	outR      *os.File
	errR      *os.File
	outDone   chan struct{}
	errDone   chan struct{}
	waitDelay time.Duration

	stopAfter func() bool   // stops the kill on session end
	afterDone chan struct{} // closed when that kill has run

	mu    sync.Mutex
	ended bool // Wait has finished: the group id may be reused
}

func startLocal(ctx context.Context, s localStart) (Process, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandboxtest: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("sandboxtest: stderr pipe: %w", err)
	}
	var c *exec.Cmd
	for attempt := 0; ; attempt++ {
		c = &exec.Cmd{
			Path:        s.path,
			Args:        append([]string{s.name}, s.args...),
			Dir:         s.dir,
			Env:         s.env,
			Stdout:      outW,
			Stderr:      errW,
			SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		}
		err = c.Start()
		// A file just written (a script uploaded to the sandbox) may still
		// be open for writing in a process that another goroutine is
		// forking at this moment; that lasts only until that process execs.
		if !errors.Is(err, syscall.ETXTBSY) || attempt == localBusyRetries || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * time.Millisecond)
	}
	// The child has its own copies of the write ends; ours must go so that
	// the readers see EOF when the child's are closed.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		if code, msg, ok := localStartFailure(s.name, err); ok {
			return &localExitedProcess{code: code, msg: msg, stderr: s.stderr}, nil
		}
		return nil, fmt.Errorf("sandboxtest: start %s: %w", s.name, err)
	}
	p := &localProcess{
		cmd:       c,
		pgid:      c.Process.Pid,
		outR:      outR,
		errR:      errR,
		outDone:   make(chan struct{}),
		errDone:   make(chan struct{}),
		waitDelay: s.waitDelay,
		afterDone: make(chan struct{}),
	}
	go localPump(outR, s.stdout, p.outDone)
	go localPump(errR, s.stderr, p.errDone)
	p.stopAfter = context.AfterFunc(ctx, func() {
		defer close(p.afterDone)
		_ = p.Signal(int(syscall.SIGKILL))
	})
	return p, nil
}

// localStartFailure maps an exec failure to the shell's exit code and
// message, for the failures a shell reports that way.
func localStartFailure(name string, err error) (code int, msg string, ok bool) {
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return 0, "", false
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 127, name + ": No such file or directory\n", true
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ETXTBSY):
		return 126, fmt.Sprintf("%s: cannot execute: %s\n", name, localErrText(err)), true
	}
	return 0, "", false
}

// Signal implements Process: it sends sig to the whole process group.
func (p *localProcess) Signal(sig int) error {
	if sig < 0 {
		return fmt.Errorf("sandboxtest: invalid signal %d", sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	err := syscall.Kill(-p.pgid, syscall.Signal(sig))
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is gone: the process has finished
	}
	return err
}

// Wait implements Process.
func (p *localProcess) Wait() (int, error) {
	waitErr := p.cmd.Wait() // reaps the group leader
	// Whatever is left of the group must not outlive the command.
	_ = p.Signal(int(syscall.SIGKILL))

	// Drain the pipes. Members of the group are dead and their ends closed;
	// a process that left the group could keep them open forever.
	drainOutput(p.outR, p.errR, p.outDone, p.errDone, p.waitDelay)

	if !p.stopAfter() {
		<-p.afterDone // the session ended: let the kill finish
	}
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()

	st := p.cmd.ProcessState
	if st == nil {
		return -1, fmt.Errorf("sandboxtest: wait: %w", waitErr)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// localPump copies r to w one read at a time until r ends, so output reaches
// w as soon as the process writes it. When w fails, the rest is read and
// dropped, so that the process never blocks on a full pipe.
func localPump(r io.Reader, w io.Writer, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32*1024)
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
	}
}

// drainOutput waits until the pumps of both output pipes are done, or
// until delay has passed; then it closes the read ends, which unblocks the
// pumps (output written later is lost), and waits for them to finish.
func drainOutput(outR, errR *os.File, outDone, errDone <-chan struct{}, delay time.Duration) {
	t := time.NewTimer(delay)
	defer t.Stop()
	out, errc := outDone, errDone
	for out != nil || errc != nil {
		select {
		case <-out:
			out = nil
		case <-errc:
			errc = nil
		case <-t.C:
			out, errc = nil, nil
		}
	}
	outR.Close()
	errR.Close()
	<-outDone
	<-errDone
}
