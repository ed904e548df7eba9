package sandbox

import (
	"context"
	"io/fs"
	"iter"

	"github.com/sbx-go/vercel-sandbox/files"
)

// The file calls of a Sandbox, after os and io/fs. Each runs one command
// in the sandbox as its default user; paths are passed as arguments, never
// through a shell, and relative paths are relative to the session's
// working directory. A failure is a *fs.PathError naming the call and the
// path, whose Err matches fs.ErrNotExist, fs.ErrExist or fs.ErrPermission
// (and the syscall.Errno the sandbox's tool reported) and unwraps to the
// *command.ExitError of the command. User has the same calls, run as that
// user.
//
// What the sandbox prints is not trusted: a listing (Stat, ReadDir, Walk,
// DirFS) whose names are not single path elements below the path listed
// is refused whole with a *ListingError. A path or name that JSON cannot
// carry as given (invalid UTF-8, a NUL byte) is refused with an
// *InputError before any request.

func (s *Sandbox) fileOps() fileOps {
	return fileOps{run: s.run, read: func(ctx context.Context, p string) ([]byte, error) {
		return s.ReadFileBytes(ctx, p)
	}, write: func(ctx context.Context, entries []files.Entry) error {
		return s.WriteFiles(ctx, entries)
	}}
}

// Stat returns the file's metadata, following symbolic links. Its Sys
// method returns a *FileStat (owner, times, inode).
func (s *Sandbox) Stat(ctx context.Context, path string) (fs.FileInfo, error) {
	return s.fileOps().stat(ctx, "stat", path, true)
}

// Lstat is Stat without following a final symbolic link; the link target
// is in FileStat.LinkTarget.
func (s *Sandbox) Lstat(ctx context.Context, path string) (fs.FileInfo, error) {
	return s.fileOps().stat(ctx, "lstat", path, false)
}

// Exists reports whether path names an existing file, following symbolic
// links (a dangling link does not exist). A failure to find out is an
// error, never false.
func (s *Sandbox) Exists(ctx context.Context, path string) (bool, error) {
	return s.fileOps().exists(ctx, path)
}

// ReadDir lists a directory sorted by name, like os.ReadDir, in one
// command: the entries' Info makes no further request.
func (s *Sandbox) ReadDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	return s.fileOps().readDir(ctx, path)
}

// Walk lists everything below root, each directory before its contents,
// in one command; root itself is not yielded. Symbolic links below root
// are reported, not followed. An error (root missing, a directory that
// cannot be read) is yielded last, after the entries that could be listed.
func (s *Sandbox) Walk(ctx context.Context, root string) iter.Seq2[WalkEntry, error] {
	return s.fileOps().walk(ctx, root)
}

// Remove removes a file, a symbolic link or an empty directory.
func (s *Sandbox) Remove(ctx context.Context, path string) error {
	return s.fileOps().remove(ctx, path)
}

// RemoveAll removes path and everything below it. A missing path is not
// an error.
func (s *Sandbox) RemoveAll(ctx context.Context, path string) error {
	return s.fileOps().removeAll(ctx, path)
}

// Rename moves oldpath to newpath, replacing newpath when it is a file or
// an empty directory, like os.Rename (it never moves into a directory).
// The error names oldpath.
func (s *Sandbox) Rename(ctx context.Context, oldpath, newpath string) error {
	return s.fileOps().rename(ctx, oldpath, newpath)
}

// CopyFile copies the file src to dst, replacing dst when it is a file.
// The error names src.
func (s *Sandbox) CopyFile(ctx context.Context, src, dst string) error {
	return s.fileOps().copyFile(ctx, src, dst)
}

// Chmod sets the permission bits of path, and setuid, setgid and sticky;
// other mode bits are refused.
func (s *Sandbox) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	return s.fileOps().chmod(ctx, path, mode)
}

// Chown sets the numeric owner and group of path; -1 keeps one unchanged.
// Giving a file away needs root: call it on AsUser("root").
func (s *Sandbox) Chown(ctx context.Context, path string, uid, gid int) error {
	return s.fileOps().chown(ctx, path, uid, gid)
}

// Symlink creates newname as a symbolic link to oldname. An existing
// newname gives an error matching fs.ErrExist.
func (s *Sandbox) Symlink(ctx context.Context, oldname, newname string) error {
	return s.fileOps().symlink(ctx, oldname, newname)
}

// Readlink returns the target of a symbolic link. A file that is not a
// link gives an error matching syscall.EINVAL.
func (s *Sandbox) Readlink(ctx context.Context, path string) (string, error) {
	return s.fileOps().readlink(ctx, path)
}

// Realpath returns the absolute path of path with every symbolic link,
// "." and ".." resolved. Every component must exist.
func (s *Sandbox) Realpath(ctx context.Context, path string) (string, error) {
	return s.fileOps().realpath(ctx, path)
}

// MkdirTemp creates a new directory in dir (empty: /tmp) whose name is
// pattern with its last "*" replaced by a random string (appended when
// there is none), like os.MkdirTemp, and returns its path.
func (s *Sandbox) MkdirTemp(ctx context.Context, dir, pattern string) (string, error) {
	return s.fileOps().mkdirTemp(ctx, dir, pattern)
}

// AppendFile appends data to a file, creating it when missing. As in the
// official SDKs it reads the file and writes it back whole: it is not
// atomic, and the file is rewritten with mode 0644.
func (s *Sandbox) AppendFile(ctx context.Context, path string, data []byte) error {
	return s.fileOps().appendFile(ctx, path, data)
}
