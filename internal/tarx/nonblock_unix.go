//go:build unix

package tarx

import "syscall"

// oNonblock keeps an open of a FIFO from blocking.
const oNonblock = syscall.O_NONBLOCK
