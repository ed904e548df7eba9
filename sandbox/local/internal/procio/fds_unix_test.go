//go:build unix

package procio

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestCloseInheritedMarksEveryDescriptor: a descriptor opened without
// close-on-exec, as one inherited from a parent is, has the flag after
// CloseInherited, by either way of setting it; standard error keeps none.
func TestCloseInheritedMarksEveryDescriptor(t *testing.T) {
	for name, mark := range map[string]func(){"CloseInherited": CloseInherited, "scan": cloexecScan} {
		t.Run(name, func(t *testing.T) {
			fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC
			require.NoError(t, err)
			t.Cleanup(func() { syscall.Close(fd) })
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			require.NoError(t, err)
			require.Zero(t, flags&unix.FD_CLOEXEC, "opened without close-on-exec")
			mark()
			flags, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			require.NoError(t, err)
			assert.NotZero(t, flags&unix.FD_CLOEXEC, "marked close-on-exec")
			flags, err = unix.FcntlInt(2, unix.F_GETFD, 0)
			require.NoError(t, err)
			assert.Zero(t, flags&unix.FD_CLOEXEC, "standard error is left alone")
		})
	}
}
