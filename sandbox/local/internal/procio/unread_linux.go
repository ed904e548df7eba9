package procio

import (
	"os"

	"golang.org/x/sys/unix"
)

// unread reports whether the pipe or terminal f holds bytes not yet read.
func unread(f *os.File) bool {
	sc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	if cerr := sc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); cerr != nil || err != nil {
		return false
	}
	return n > 0
}
