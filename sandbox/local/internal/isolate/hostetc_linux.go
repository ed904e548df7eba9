package isolate

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/procio"
)

// The host's files of /etc that programs need (etcPaths) reach every
// sandbox through one read-only mount: a private copy of them, the stage,
// which is the /etc of a sandbox without its own (with the files every
// such sandbox shares, see writeSharedEtc), or appears at stagedEtc, to
// which a sandbox's own /etc links. One mount rather than one per file or
// directory, because bwrap reads the whole mount table for each mount it
// makes. The stage follows the host: before each
// sandbox (at most every stageCheck), an entry whose host file was replaced (its modification time,
// size, mode or link target changed) is copied again and swapped in at
// once (RENAME_EXCHANGE); running sandboxes see the new copy.

// stage is the private copy of the host's files of /etc.
type stage struct {
	src    string        // the host's /etc
	every  time.Duration // how often it is compared with the host
	mu     sync.Mutex
	seen   time.Time         // when it was last compared
	dir    string            // the copy; its parent is private to the server
	stamps map[string]string // per name of etcPaths: its host file when copied
	names  []string          // the names copied, in etcPaths order
}

// stageCheck is how often a stage is compared with the host, at most:
// the host's files of /etc change seldom, and a sandbox started within a
// second of a change may see the former file.
const stageCheck = time.Second

// stagePrefix starts the name of a stage's private parent directory; the
// server's pid follows.
const stagePrefix = "sandbox-etc-"

// refresh brings the stage up to date with the host and returns its
// directory and the names it holds. It creates the stage at its first call.
func (s *stage) refresh() (string, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" && time.Since(s.seen) < s.every {
		return s.dir, s.names, nil
	}
	if _, err := os.Lstat(s.dir); s.dir != "" && err != nil {
		// Removed under us (a cleaner of the temporary directory): again.
		_ = os.RemoveAll(filepath.Dir(s.dir))
		s.dir = ""
	}
	if s.dir == "" {
		removeStaleStages()
		parent, err := os.MkdirTemp(stageRoot(), stagePrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return "", nil, err
		}
		s.dir, s.stamps = filepath.Join(parent, "etc"), map[string]string{}
		if err := os.Mkdir(s.dir, 0o755); err != nil {
			return "", nil, err
		}
		if err := writeSharedEtc(s.dir); err != nil {
			return "", nil, fmt.Errorf("isolate: stage: %w", err)
		}
	}
	var names []string // a new slice: callers keep the former one
	for _, name := range etcPaths {
		host, staged := outsideLink(filepath.Join(s.src, name)), filepath.Join(s.dir, name)
		stamp := stampOf(host)
		if stamp != s.stamps[name] {
			if err := replace(host, staged); err != nil {
				return "", nil, fmt.Errorf("isolate: copy %s: %w", host, err)
			}
			s.stamps[name] = stamp
		}
		if stamp != "" {
			names = append(names, name)
		}
	}
	s.names, s.seen = names, time.Now()
	return s.dir, names, nil
}

// close removes the stage; a later refresh makes a new one.
func (s *stage) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		_ = os.RemoveAll(filepath.Dir(s.dir))
	}
	s.dir = ""
}

// stampOf describes the host file p as far as a replacement changes it,
// or returns "" when it is missing.
func stampOf(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return ""
	}
	target, _ := os.Readlink(p)
	return fmt.Sprint(p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), target)
}

// outsideLink returns what p, a symbolic link, leads to when that is
// nowhere a sandbox sees (/etc/resolv.conf -> /run/systemd/resolve/...):
// that file is copied rather than a link that would lead nowhere. Any
// other p is returned as it is.
func outsideLink(p string) string {
	target, err := filepath.EvalSymlinks(p)
	if err != nil || target == p {
		return p
	}
	for _, d := range systemDirs {
		if strings.HasPrefix(target, "/"+d+"/") {
			return p
		}
	}
	return target
}

// replace makes staged a copy of host (nothing when host is missing),
// swapping the new copy in at once.
func replace(host, staged string) error {
	if err := os.MkdirAll(filepath.Dir(staged), 0o755); err != nil {
		return err
	}
	tmp := staged + ".new"
	_ = os.RemoveAll(tmp)
	if _, err := os.Lstat(host); errors.Is(err, fs.ErrNotExist) {
		return os.RemoveAll(staged)
	}
	if err := copyTree(host, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, staged, unix.RENAME_EXCHANGE)
	if errors.Is(err, syscall.ENOENT) {
		return os.Rename(tmp, staged)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return os.RemoveAll(tmp) // the old copy
}

// copyTree copies regular files, symbolic links and directories from src
// to dst, keeping their permission bits; anything else is left out.
func copyTree(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.IsDir():
		if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyTree(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// stageRoot is where stages are made: /dev/shm, a tmpfs, where it is
// one (a copy of /etc/ssl/certs is hundreds of links, each a journal
// write on a disk), else the temporary directory.
func stageRoot() string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// removeStaleStages removes the stages of servers that ended without
// closing their engine.
func removeStaleStages() {
	root := stageRoot()
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if procio.Abandoned(e.Name(), stagePrefix) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}
