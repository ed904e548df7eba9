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

// fileOwner returns the owner and group of a file.
func fileOwner(info fs.FileInfo) (uid, gid int, ok bool) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid), true
	}
	return 0, 0, false
}
