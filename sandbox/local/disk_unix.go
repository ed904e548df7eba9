//go:build unix

package local

import (
	"io/fs"
	"syscall"
)

// onDisk is what a file takes on disk: its blocks.
func onDisk(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}

// oNonblock opens a FIFO without waiting for its other end.
const oNonblock = syscall.O_NONBLOCK
