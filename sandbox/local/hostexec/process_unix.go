//go:build unix

package hostexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
)

const localSupported = true

// localBusyRetries is how often Start retries an executable that is
// momentarily busy (ETXTBSY).
const localBusyRetries = 20

var errLocalUnsupported error

// localProcess is a running command: the leader of its own session and
// process group.
type localProcess struct {
	cmd       *exec.Cmd
	pgid      int
	mark      string         // the marker of its environment; see sweep
	group     *cgroup.Cgroup // its control group, or nil
	sweep     bool           // without a group, sweep its marker when it ends
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

func startLocal(ctx context.Context, s localStart) (local.Process, error) {
	outR, outW, errR, errW, err := procio.Pipes()
	if err != nil {
		return nil, fmt.Errorf("hostexec: %w", err)
	}
	// A session of its own: no controlling terminal, and a group that
	// Signal reaches as a whole.
	c, tr, err := startCmd(ctx, s, func(c *exec.Cmd) {
		c.Stdout, c.Stderr = outW, errW
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	})
	// The child has its own copies of the write ends; ours must go so that
	// the readers see EOF when the child's are closed.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return startFailure(s, err)
	}
	return watch(ctx, c, tr, s.waitDelay, outR, errR, s.stdout, s.stderr), nil
}

// tracking is how the processes of a command are found when it ends, those
// that left its process group included.
type tracking struct {
	mark  string         // carried in their environment; see sweep
	group *cgroup.Cgroup // where they are born, and stay; nil: none
	sweep bool           // without a group, sweep the mark at the end
}

// startCmd starts the command of s, with what set adds, retrying an
// executable that is momentarily busy. Every process the command starts
// carries the returned mark in its environment, so that a sweep finds the
// ones that left its group, and is born in its control group where there
// is one (even a daemon that clears its environment stays there); no
// descriptor of the server but 0-2 reaches it.
func startCmd(ctx context.Context, s localStart, set func(*exec.Cmd)) (*exec.Cmd, tracking, error) {
	tr := tracking{mark: newMark(), sweep: s.sweep}
	if s.groups != nil {
		tr.group, _ = s.groups.New(0, -1) // without one, the mark alone
	}
	env := append(slices.Clip(s.env), markEnv+"="+tr.mark)
	procio.CloseInherited()
	var c *exec.Cmd
	start := func(into func(*syscall.SysProcAttr)) error {
		for attempt := 0; ; attempt++ {
			c = &exec.Cmd{
				Path: s.path,
				Args: append([]string{s.name}, s.args...),
				Dir:  s.dir,
				Env:  env,
			}
			set(c)
			into(c.SysProcAttr)
			err := c.Start()
			// A file just written (a script uploaded to the sandbox) may
			// still be open for writing in a process that another goroutine
			// is forking at this moment; that lasts only until that process
			// execs.
			if !errors.Is(err, syscall.ETXTBSY) || attempt == localBusyRetries || ctx.Err() != nil {
				return err
			}
			time.Sleep(time.Duration(attempt+1) * time.Millisecond)
		}
	}
	born, err := tr.group.StartIn(start)
	switch {
	case err != nil && c != nil && c.Process != nil: // started, but the group failed
		_ = c.Process.Kill()
		_ = c.Wait()
		fallthrough
	case err != nil:
		tr.group.Release()
		return c, tracking{}, err
	case tr.group != nil && !born:
		_ = tr.group.Add(c.Process.Pid) // cgroup v2: moved at once
	}
	return c, tr, nil
}

// startFailure reports a command that did not start: as a shell would
// when it can say why, else as an error.
func startFailure(s localStart, err error) (local.Process, error) {
	if code, msg, ok := shellexec.StartFailure(s.name, err); ok {
		return &procio.Exited{Code: code, Msg: msg, Stderr: s.stderr}, nil
	}
	return nil, fmt.Errorf("hostexec: start %s: %w", s.name, err)
}

// watch pumps the output of the started process group c to stdout and
// stderr and kills the group when ctx ends. outR and errR may be the same
// file (a terminal).
func watch(ctx context.Context, c *exec.Cmd, tr tracking, waitDelay time.Duration, outR, errR *os.File, stdout, stderr io.Writer) *localProcess {
	p := &localProcess{
		cmd:       c,
		pgid:      c.Process.Pid,
		mark:      tr.mark,
		sweep:     tr.sweep,
		group:     tr.group,
		outR:      outR,
		errR:      errR,
		outDone:   make(chan struct{}),
		errDone:   make(chan struct{}),
		waitDelay: waitDelay,
		afterDone: make(chan struct{}),
	}
	go procio.Pump(outR, stdout, p.outDone)
	if errR == outR {
		p.errDone = p.outDone
	} else {
		go procio.Pump(errR, stderr, p.errDone)
	}
	p.stopAfter = context.AfterFunc(ctx, func() {
		defer close(p.afterDone)
		_ = p.Signal(int(syscall.SIGKILL))
	})
	return p
}

// Signal implements Process: it sends sig to the whole process group.
func (p *localProcess) Signal(sig int) error { return p.kill(-p.pgid, sig) }

// SignalLeader implements local.LeaderSignaler: the command's process
// alone, not the processes it started (its group leader is its pid).
func (p *localProcess) SignalLeader(sig int) error { return p.kill(p.pgid, sig) }

// kill sends sig to pid (a negative pid names a process group).
func (p *localProcess) kill(pid, sig int) error {
	if sig < 0 {
		return fmt.Errorf("hostexec: invalid signal %d", sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	err := syscall.Kill(pid, syscall.Signal(sig))
	if sig == int(syscall.SIGKILL) && pid < 0 {
		// What left the process group, daemons included: the control
		// group holds them all; without one, the mark finds them (a scan
		// of every process of the host, which costs about as much as the
		// rest of a short command).
		if p.group != nil {
			p.group.KillAll()
		} else if p.sweep {
			sweep(p.mark)
		}
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil // the group is gone: the process has finished
	}
	return err
}

// Wait implements Process.
func (p *localProcess) Wait() (int, error) {
	waitErr := p.cmd.Wait() // reaps the group leader
	// Whatever is left of the group, and what left it (daemons), must not
	// outlive the command.
	_ = p.Signal(int(syscall.SIGKILL))

	// Drain the pipes. Members of the group are dead and their ends closed;
	// a process that left the group could keep them open forever.
	procio.Drain(p.outR, p.errR, p.outDone, p.errDone, p.waitDelay)

	if !p.stopAfter() {
		<-p.afterDone // the session ended: let the kill finish
	}
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
	p.group.Release()

	st := p.cmd.ProcessState
	if st == nil {
		return -1, fmt.Errorf("hostexec: wait: %w", waitErr)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}
