//go:build unix

package main

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// keyboard returns a reader of in that the session can interrupt when it
// ends (a read of os.Stdin cannot be): a non-blocking duplicate that the
// runtime poller manages. The terminal's non-blocking flag is shared with
// the shell that started this program, so restore clears it again.
func keyboard(in *os.File) (keys *os.File, restore func(), err error) {
	fd, err := unix.FcntlInt(in.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("keyboard: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("keyboard: %w", err)
	}
	keys = os.NewFile(uintptr(fd), "keyboard")
	return keys, func() {
		keys.Close()
		_ = unix.SetNonblock(int(in.Fd()), false)
	}, nil
}

// followResize passes the terminal's new size to s on each SIGWINCH, until
// the returned function is called.
func followResize(fd int, s *pty.Session) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ch:
				if w, h, err := term.GetSize(fd); err == nil {
					_ = s.Resize(h, w)
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}
