//go:build unix

package hostexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// The terminal's master side must be readable with deadlines and closable
// while a read is in progress: a background job of the shell can keep the
// terminal open after the shell has exited, and Wait then gives up after
// WaitDelay, as it does for pipes. creack/pty opens the pair portably but
// leaves the master in blocking mode (it asks for its descriptor), so the
// master is duplicated into a non-blocking, close-on-exec descriptor that
// the runtime poller manages, and sized with ioctls that keep it so.

// startTTY starts the command of s on a new terminal of rows by cols, as
// its controlling terminal and the leader of a new session.
func startTTY(ctx context.Context, s localStart, rows, cols int) (local.TTYProcess, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("hostexec: open terminal: %w", err)
	}
	master, err := pollable(ptmx)
	ptmx.Close()
	if err != nil {
		tty.Close()
		return nil, fmt.Errorf("hostexec: terminal: %w", err)
	}
	p := &ttyProcess{master: master}
	if err := p.Resize(rows, cols); err != nil {
		tty.Close()
		master.Close()
		return nil, err
	}
	c, err := startCmd(ctx, s, func(c *exec.Cmd) {
		c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	})
	// The child has its own copy of the terminal; ours must go so that
	// reads of the master end once the child's is closed.
	tty.Close()
	if err != nil {
		master.Close()
		proc, err := startFailure(s, err)
		if err != nil {
			return nil, err
		}
		return ttyExited{proc}, nil
	}
	p.localProcess = watch(ctx, c, s.waitDelay, master, master, s.stdout, s.stdout)
	return p, nil
}

// pollable returns a non-blocking duplicate of f for the runtime poller.
func pollable(f *os.File) (*os.File, error) {
	var fd int
	var err error
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	if cerr := rc.Control(func(ofd uintptr) {
		fd, err = unix.FcntlInt(ofd, unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// ttyProcess is a process group on a terminal; it reads and waits as a
// process on pipes does, with the master as its one output.
type ttyProcess struct {
	*localProcess
	master *os.File
}

// Write implements local.TTYProcess: p is typed on the terminal.
func (p *ttyProcess) Write(b []byte) (int, error) { return p.master.Write(b) }

// Resize implements local.TTYProcess.
func (p *ttyProcess) Resize(rows, cols int) error {
	if rows <= 0 || rows > 1<<16-1 || cols <= 0 || cols > 1<<16-1 {
		return fmt.Errorf("hostexec: invalid terminal size %dx%d", rows, cols)
	}
	rc, err := p.master.SyscallConn()
	if err != nil {
		return fmt.Errorf("hostexec: resize: %w", err)
	}
	ws := &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}
	if cerr := rc.Control(func(fd uintptr) { err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hostexec: resize: %w", err)
	}
	return nil
}
