//go:build !unix

package benchdata

import "time"

// CPUTime is the CPU time the process has used so far; zero on systems
// where it is not read.
func CPUTime() time.Duration { return 0 }
