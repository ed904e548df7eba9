package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// virtualCwd is the working directory of a session in virtual mode: of
// every session with WithFriendly, else of a sandbox created with a legacy
// runtime.
const virtualCwd = "/vercel/sandbox"

// imageCwd is the working directory, and HOME, of a sandbox created with an
// image or with neither image nor runtime, on hosted Vercel.
const imageCwd = "/vercel"

// errEscapes reports a path that leaves the sandbox's directory.
var errEscapes = errors.New("path escapes the sandbox")

// sessionCwd is the working directory of sb's sessions.
func (s *Server) sessionCwd(sb *sandboxRec) string {
	cwd := virtualCwd
	if sb.homeCwd && s.hosted() {
		cwd = imageCwd
	}
	if s.cfg.hostPaths {
		return filepath.Join(sb.dir, filepath.FromSlash(cwd))
	}
	return cwd
}

// commandEnv is the environment a command starts with, before its own: on
// hosted Vercel, HOME is /vercel in a sandbox created without a legacy
// runtime.
func (s *Server) commandEnv(sb *sandboxRec) map[string]string {
	if !sb.homeCwd || !s.hosted() {
		return nil
	}
	return map[string]string{"HOME": s.sessionCwd(sb)}
}

// makeCwd creates the host directory behind the session working directory
// of sb.
func (s *Server) makeCwd(sb *sandboxRec) error {
	if err := makeBase(sb); err != nil {
		return err
	}
	dir, err := s.hostPath(sb, s.sessionCwd(sb))
	if err != nil {
		return err
	}
	_, err = makeDirIn(sb.dir, dir)
	return err
}

// resolvePath makes p absolute against base (both sandbox paths) and
// cleans it.
func (s *Server) resolvePath(base, p string) string {
	if s.cfg.hostPaths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return filepath.Clean(p)
	}
	if !path.IsAbs(p) {
		p = path.Join(base, p)
	}
	return path.Clean("/" + p)
}

// relPath maps an absolute, clean sandbox path to a path relative to the
// sandbox's host directory, for use with os.Root. In virtual mode no path
// can escape (the sandbox root is its own /); in host-path mode paths must
// stay inside the directory.
func (s *Server) relPath(sb *sandboxRec, p string) (string, error) {
	if s.cfg.hostPaths {
		rel, err := filepath.Rel(sb.dir, p)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", fmt.Errorf("%w: %s", errEscapes, p)
		}
		return rel, nil
	}
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return ".", nil
	}
	return filepath.FromSlash(rel), nil
}

// HostPath returns the host path behind sandboxPath in the named sandbox.
// A relative sandboxPath is resolved against the session working
// directory. In host-path mode a path outside the sandbox's directory is an
// error. The result is lexical: symbolic links are not followed.
func (s *Server) HostPath(sandboxName, sandboxPath string) (string, error) {
	if sandboxName == "" {
		return "", apierr.Invalid("sandboxName", "empty")
	}
	s.mu.Lock()
	sb := s.sandboxes[sandboxName]
	s.mu.Unlock()
	if sb == nil {
		return "", fmt.Errorf("local: no sandbox named %q", sandboxName)
	}
	return s.hostPath(sb, s.resolvePath(s.sessionCwd(sb), sandboxPath))
}

func (s *Server) hostPath(sb *sandboxRec, abs string) (string, error) {
	rel, err := s.relPath(sb, abs)
	if err != nil {
		return "", err
	}
	return filepath.Join(sb.dir, rel), nil
}

// copyTree copies the directory tree at src into dst (which must not
// exist) and returns the number of bytes of data it copied: holes of sparse
// files stay holes and are not counted. Symbolic links are copied as links
// and never followed; FIFOs, sockets and devices are skipped, without
// opening them; setuid and setgid bits are dropped.
func copyTree(dst, src string) (int64, error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			if err := os.Chmod(target, mode.Perm()|0o700); err != nil {
				return err
			}
		case mode.IsRegular():
			n, err := copyFile(root, target, rel, mode.Perm())
			total += n
			if err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			link, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		default:
			return nil
		}
		return keepOwner(target, info)
	})
	return total, err
}

// keepOwner gives the copy at target (never followed: a fresh tree of the
// server's) the owner and group of the original, info, when the server
// runs as root: the sandbox's users keep their files across snapshots.
func keepOwner(target string, info fs.FileInfo) error {
	uid, gid, ok := fileOwner(info)
	if !ok || os.Geteuid() != 0 {
		return nil
	}
	return os.Lchown(target, uid, gid)
}

// copyFile copies the regular file rel of root to dst, which it creates.
// Anything but a regular file found at rel when it opens it is skipped.
func copyFile(root *os.Root, dst, rel string, perm fs.FileMode) (int64, error) {
	in, err := root.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, err
	}
	n, err := copyData(out, in, info.Size())
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, perm)
	}
	return n, err
}

// replaceTree makes dst a copy of src. It empties dst rather than
// removing it: dst may be the mount point of the sandbox's file system.
func replaceTree(dst, src string) error {
	entries, err := os.ReadDir(dst)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	_, err = copyTree(dst, src)
	return err
}

// makeDirIn creates the directory abs (a host path inside dir) and its
// parents without following a symbolic link out of dir, and returns abs.
func makeDirIn(dir, abs string) (string, error) {
	rel, err := filepath.Rel(dir, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("%w: %s", errEscapes, abs)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return "", err
	}
	return abs, nil
}
