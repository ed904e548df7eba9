package sandboxtest

import (
	"io/fs"
	"syscall"
	"time"
)

// fileStat is what find reports beyond fs.FileInfo.
type fileStat struct {
	uid, gid     uint32
	nlink, ino   uint64
	atime, ctime time.Time
}

func statOf(fi fs.FileInfo) fileStat {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{nlink: 1, atime: fi.ModTime(), ctime: fi.ModTime()}
	}
	return fileStat{
		uid: st.Uid, gid: st.Gid, nlink: uint64(st.Nlink), ino: st.Ino,
		atime: time.Unix(st.Atim.Unix()), ctime: time.Unix(st.Ctim.Unix()),
	}
}
