//go:build unix

package procio

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CloseInherited marks every descriptor of this process above standard
// error close-on-exec, so that no child started from now on inherits one.
// Go opens its own descriptors so; this catches those the program
// inherited from its parent (a supervisor's log file, the write end of a
// shell's pipe), which a child would otherwise receive whatever
// exec.Cmd.ExtraFiles says. On Linux 5.11 and later it is one system call
// (close_range with CLOSE_RANGE_CLOEXEC); elsewhere it lists the open
// descriptors, which costs a server with many connections more than the
// rest of starting a short command.
func CloseInherited() {
	if !cloexecRange() {
		cloexecScan()
	}
}

// cloexecScan marks the descriptors above standard error close-on-exec one
// by one.
func cloexecScan() {
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

// Abandoned reports whether name, the name of something a server leaves
// on the host while it runs, is prefix, a pid and "-…" and that pid is no
// running process but this one's: its server ended without removing it.
func Abandoned(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	return ok && err == nil && pid > 0 && pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
