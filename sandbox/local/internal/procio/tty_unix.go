//go:build unix

package procio

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// The master side of a terminal must be readable with deadlines and
// closable while a read is in progress: a background job of the shell can
// keep the terminal open after the shell has exited, and Drain then gives
// up after its delay, as it does for pipes. creack/pty opens the pair
// portably but leaves the master in blocking mode (it asks for its
// descriptor), so OpenTTY duplicates the master into a non-blocking,
// close-on-exec descriptor that the runtime poller manages, and ResizeTTY
// sizes it with an ioctl that keeps it so.

// OpenTTY opens a new pseudo-terminal of rows by cols. The slave is for
// the child (its standard streams and controlling terminal); the parent
// closes its copy once the child has started.
func OpenTTY(rows, cols int) (master, slave *os.File, err error) {
	ptmx, slave, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open terminal: %w", err)
	}
	master, err = pollable(ptmx)
	ptmx.Close()
	if err == nil {
		err = ResizeTTY(master, rows, cols)
	}
	if err != nil {
		slave.Close()
		if master != nil {
			master.Close()
		}
		return nil, nil, err
	}
	return master, slave, nil
}

// pollable returns a non-blocking duplicate of f for the runtime poller.
func pollable(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	if cerr := rc.Control(func(ofd uintptr) {
		fd, err = unix.FcntlInt(ofd, unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("terminal: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// ResizeTTY sets the size of the terminal whose master is master; its
// foreground process group gets SIGWINCH.
func ResizeTTY(master *os.File, rows, cols int) error {
	if rows <= 0 || rows > 1<<16-1 || cols <= 0 || cols > 1<<16-1 {
		return fmt.Errorf("invalid terminal size %dx%d", rows, cols)
	}
	rc, err := master.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize terminal: %w", err)
	}
	ws := &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}
	if cerr := rc.Control(func(fd uintptr) { err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("resize terminal: %w", err)
	}
	return nil
}

// Terminal is the master side of a command's terminal, as a TTYProcess of
// package sandbox/local adds it to a process: input typed on it, and its
// size.
type Terminal struct {
	Master *os.File
}

// Write types b on the terminal.
func (t Terminal) Write(b []byte) (int, error) { return t.Master.Write(b) }

// Resize sets the terminal's size; its foreground process group gets
// SIGWINCH.
func (t Terminal) Resize(rows, cols int) error { return ResizeTTY(t.Master, rows, cols) }
