//go:build !linux

package sandboxtest

import (
	"io/fs"
	"time"
)

// fileStat is what find reports beyond fs.FileInfo; outside Linux the
// file tools report the modification time for every time, one link and
// no owner.
type fileStat struct {
	uid, gid     uint32
	nlink, ino   uint64
	atime, ctime time.Time
}

func statOf(fi fs.FileInfo) fileStat {
	return fileStat{nlink: 1, atime: fi.ModTime(), ctime: fi.ModTime()}
}
