package isolate

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// A sandbox's own /etc. With the engine's users, a sandbox whose Spec
// names its own /etc (Spec.Etc) sees that directory, writable, at /etc:
// useradd and friends lock it, write passwd+ and rename it over passwd, as
// on the real image, and what they change stays with the sandbox. The
// host's files of /etc that programs need (etcPaths) are staged, read-only,
// at stagedEtc, and the sandbox's /etc links to them, links made once, on
// the host, through an os.Root: bwrap never writes into a directory that
// sandboxes can change.

// stagedEtc is where the host's files of /etc appear in a sandbox (see
// stage).
const stagedEtc = "/run/host-etc"

// accountFiles are the files of the sandbox's own /etc that belong to its
// root.
var accountFiles = []string{".", "passwd", "group", "shadow", "gshadow"}

// ownEtc reports whether spec's sandbox has its own /etc.
func (e *Engine) ownEtc(spec *Spec) bool { return e.users != nil && spec.Etc != "" }

// prepareEtc completes the sandbox's own /etc at dir: what the server made
// there becomes the sandbox root's, a missing hostname or hosts file is
// written, and each of the host's staged files that is missing is linked.
// A name the sandbox took for something else is left alone.
func (e *Engine) prepareEtc(dir, hostname string, staged []string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	rootID := e.HostID(0)
	for _, name := range accountFiles {
		fi, err := root.Lstat(name)
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
			if err := root.Lchown(name, rootID, rootID); err != nil {
				return err
			}
		}
	}
	for _, f := range []etcFile{{"hostname", []byte(orDefault(hostname) + "\n")}, {"hosts", hostsData(hostname)}} {
		file, err := root.OpenFile(f.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = file.Write(f.data)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		_ = root.Lchown(f.name, rootID, rootID)
	}
	for _, name := range staged {
		if _, err := root.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				continue
			}
		}
		if root.Symlink(stagedEtc+"/"+name, name) == nil {
			_ = root.Lchown(name, rootID, rootID)
		}
	}
	return nil
}
