//go:build unix

package procio

import (
	"os"
	"strconv"
	"syscall"
)

// CloseInherited marks every descriptor of this process above standard
// error close-on-exec, so that no child started from now on inherits one.
// Go opens its own descriptors so; this catches those the program
// inherited from its parent (a supervisor's log file, the write end of a
// shell's pipe), which a child would otherwise receive whatever
// exec.Cmd.ExtraFiles says.
func CloseInherited() {
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
