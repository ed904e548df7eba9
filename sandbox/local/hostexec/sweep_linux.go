package hostexec

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sweepRounds bounds how often sweep looks again for processes that were
// forked while it killed the others.
const sweepRounds = 8

// sweep kills, with SIGKILL, every process of this user whose environment
// carries the marker mark, and repeats until it finds none.
func sweep(mark string) {
	needle := []byte("\x00" + markEnv + "=" + mark + "\x00")
	self := os.Getpid()
	for range sweepRounds {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !bytes.Contains(append([]byte{0}, env...), needle) {
				continue
			}
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}
