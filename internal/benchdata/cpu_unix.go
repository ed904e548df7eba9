//go:build unix

package benchdata

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) the process has used so far,
// every goroutine counted: what a benchmark whose server runs in the same
// process costs in all, less exposed than wall time to a busy machine's
// scheduling. Zero where it cannot be read.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
