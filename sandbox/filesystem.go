package sandbox

import (
	"context"
	"io"
	"io/fs"
	"iter"
	"log/slog"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
)

// FileSystem holds the file calls of a sandbox, named and shaped after os
// and io/fs. Sandbox.FS acts as the sandbox's default user, with relative
// paths relative to the session's working directory; User.FS acts as one
// user, with relative paths relative to its home directory, so that the
// user's own permissions apply. The two are the same type: whatever one
// can do, the other can.
//
// The API has endpoints to read and write files and to make directories;
// every other call runs one of the sandbox's own tools (find, mv, rm, ...)
// as a command, as the official SDKs do, and says so. Paths are passed as
// arguments, never through a shell. A failure is a *fs.PathError naming
// the call and the path, whose Err matches fs.ErrNotExist, fs.ErrExist or
// fs.ErrPermission (and the syscall.Errno the tool reported) and unwraps
// to the *command.ExitError of the command.
//
// What the sandbox prints is not trusted: a listing (Stat, ReadDir, Walk,
// DirFS) whose names are not single path elements below the path listed
// is refused whole with a *ListingError. A path or name that JSON cannot
// carry as given (invalid UTF-8, a NUL byte) is refused with an
// *InputError before any request.
//
// A FileSystem is safe for concurrent use.
type FileSystem struct {
	sb   *Sandbox
	user *User // nil: the sandbox's default user
}

// FS returns the file calls of the sandbox, made as its default user.
func (s *Sandbox) FS() *FileSystem { return &FileSystem{sb: s} }

// FS returns the file calls of the sandbox, made as the user.
func (u *User) FS() *FileSystem { return &FileSystem{sb: u.sb, user: u} }

// run runs cmd as the file system's user.
func (f *FileSystem) run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if f.user != nil {
		return f.user.run(ctx, cmd)
	}
	return f.sb.run(ctx, cmd)
}

func (f *FileSystem) ops() fileOps { return fileOps{run: f.run} }

// Open opens a file for reading, as a stream the caller must close. A
// missing file gives an error matching fs.ErrNotExist. For a Sandbox the
// file is read through the file API; for a User, base64 runs in the
// sandbox as the user, as the official SDK does, and its output is
// decoded as it arrives.
//
// Open returns an io.ReadCloser, not a file type: the API streams a file
// once from its start, so there is nothing to seek, and a Stat would be
// a command of its own (call Stat).
func (f *FileSystem) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	ctx, op := f.sb.c.start(ctx, observe.OpDownload, slog.String(observe.KeySandbox, f.sb.name))
	var rc io.ReadCloser
	var err error
	if f.user != nil {
		rc, err = f.user.open(ctx, name)
	} else {
		rc, _, err = f.sb.open(ctx, name)
	}
	if op == nil {
		return rc, err
	}
	if err != nil {
		op.End(err)
		return nil, err
	}
	return &observedFile{ReadCloser: rc, op: op}, nil
}

// ReadFile reads a whole file, like os.ReadFile: through the file API for
// a Sandbox, through base64 run in the sandbox for a User; see Open.
func (f *FileSystem) ReadFile(ctx context.Context, name string) ([]byte, error) {
	rc, err := f.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// WriteFile writes data to a file with permissions perm, creating it and
// its parent directories, or replacing it, like os.WriteFile (perm applies
// to a replaced file too). A name that is a directory ("a/", "a/.") is
// refused. It is one upload; for a User it then runs chown and chmod in
// the sandbox, as WriteFiles does.
func (f *FileSystem) WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	if err := checkFilePath("name", name); err != nil {
		return err
	}
	if _, err := modeBits("perm", perm); err != nil {
		return err
	}
	return f.WriteFiles(ctx, []files.Entry{files.FromBytes(name, data).WithMode(perm)}, files.WriteParams{})
}

// WriteFiles uploads entries as one streamed tar.gz: the archive is
// produced while it is sent, so memory stays bounded whatever the size.
// Parent directories are created. The compression level defaults to
// gzip.BestSpeed. The upload is sent chunked, or with a Content-Length on
// a client made WithSizedUploads; a 411 or 400 answer to a chunked upload
// is a *ChunkedUploadError.
//
// When every entry can be reopened (bytes, local files, fs.FS trees) a
// failed upload is retried and, after a 410, replayed on the resumed
// session. An upload with an entry read from a plain io.Reader is sent
// exactly once (a sized upload spooled to a file is retried from it).
//
// For a User, the files are then given to the user with chown and chmod
// run as root: they are owned by the user and its group, and directories
// made below the home directory are the user's with mode 770, as the
// official SDK leaves them.
func (f *FileSystem) WriteFiles(ctx context.Context, entries []files.Entry, p files.WriteParams) error {
	ctx, op := f.sb.c.start(ctx, observe.OpUpload, slog.String(observe.KeySandbox, f.sb.name))
	if op != nil {
		var n int64
		for _, e := range entries {
			n += e.Size()
		}
		op.Set(slog.Int(observe.KeyFiles, len(entries)), slog.Int64(observe.KeyBytes, n))
	}
	var err error
	if f.user != nil {
		err = f.user.writeFiles(ctx, entries, p)
	} else {
		err = f.sb.writeFiles(ctx, entries, p)
	}
	op.End(err)
	return err
}

// DownloadParams refines FileSystem.DownloadFile.
type DownloadParams struct {
	// Progress, when set, is called with the bytes read so far and the
	// total size (-1 when unknown) as the download proceeds.
	Progress func(read, total int64)
}

// DownloadFile copies a file of the sandbox to localPath on this machine,
// creating its parent directories. It reads as Open does: through the
// file API for a Sandbox, through base64 run in the sandbox for a User.
// The local file appears
// complete or not at all (it is written to a temporary file and renamed).
// It returns the bytes copied.
func (f *FileSystem) DownloadFile(ctx context.Context, name, localPath string, p DownloadParams) (int64, error) {
	ctx, op := f.sb.c.start(ctx, observe.OpDownload, slog.String(observe.KeySandbox, f.sb.name))
	n, err := f.download(ctx, name, localPath, p)
	op.Set(slog.Int(observe.KeyFiles, 1), slog.Int64(observe.KeyBytes, n))
	op.End(err)
	return n, err
}

// Mkdir creates a directory with permissions perm; its parent must exist.
// An existing name gives an error matching fs.ErrExist. With perm 0o755 a
// Sandbox makes it through the file API; otherwise mkdir runs in the
// sandbox, and sets perm as given (no umask applies).
func (f *FileSystem) Mkdir(ctx context.Context, name string, perm fs.FileMode) error {
	return f.mkdir(ctx, name, perm, false)
}

// MkdirAll creates a directory and any missing parents, like os.MkdirAll;
// an existing directory is not an error. With perm 0o755 a Sandbox makes
// them through the file API; otherwise mkdir -p runs in the sandbox, which
// gives perm to the last directory and 0o755 to the parents it makes.
func (f *FileSystem) MkdirAll(ctx context.Context, name string, perm fs.FileMode) error {
	return f.mkdir(ctx, name, perm, true)
}

// MkdirTemp creates a new directory in dir (empty: /tmp) whose name is
// pattern with its last "*" replaced by a random string (appended when
// there is none), like os.MkdirTemp, and returns its path. It runs mktemp
// in the sandbox.
func (f *FileSystem) MkdirTemp(ctx context.Context, dir, pattern string) (string, error) {
	return f.ops().mkdirTemp(ctx, dir, pattern)
}

// Stat returns a file's metadata, following symbolic links. Its Sys
// method returns a *FileStat (owner, times, inode). It runs find in the
// sandbox.
func (f *FileSystem) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.ops().stat(ctx, "stat", name, true)
}

// Lstat is Stat without following a final symbolic link; the link target
// is in FileStat.LinkTarget. It runs find in the sandbox.
func (f *FileSystem) Lstat(ctx context.Context, name string) (fs.FileInfo, error) {
	return f.ops().stat(ctx, "lstat", name, false)
}

// ReadDir lists a directory sorted by name, like os.ReadDir. It runs find
// in the sandbox once: the entries' Info makes no further request.
func (f *FileSystem) ReadDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	return f.ops().readDir(ctx, name)
}

// Walk lists everything below root, each directory before its contents;
// root itself is not yielded. Symbolic links below root are reported, not
// followed. It runs find in the sandbox once. An error (root missing, a
// directory that cannot be read) is yielded last, after the entries that
// could be listed.
func (f *FileSystem) Walk(ctx context.Context, root string) iter.Seq2[WalkEntry, error] {
	return f.ops().walk(ctx, root)
}

// Remove removes a file, a symbolic link or an empty directory. It runs
// rm in the sandbox.
func (f *FileSystem) Remove(ctx context.Context, name string) error {
	return f.ops().remove(ctx, name)
}

// RemoveAll removes name and everything below it; a missing name is not
// an error. It runs rm -rf in the sandbox.
func (f *FileSystem) RemoveAll(ctx context.Context, name string) error {
	return f.ops().removeAll(ctx, name)
}

// Rename moves oldpath to newpath, replacing newpath when it is a file or
// an empty directory, like os.Rename (it never moves into a directory).
// The error names oldpath. It runs mv in the sandbox.
func (f *FileSystem) Rename(ctx context.Context, oldpath, newpath string) error {
	return f.ops().rename(ctx, oldpath, newpath)
}

// Symlink creates newname as a symbolic link to oldname. An existing
// newname gives an error matching fs.ErrExist. It runs ln in the sandbox.
func (f *FileSystem) Symlink(ctx context.Context, oldname, newname string) error {
	return f.ops().symlink(ctx, oldname, newname)
}

// Readlink returns the target of a symbolic link. A file that is not a
// link gives an error matching syscall.EINVAL. It runs find in the
// sandbox.
func (f *FileSystem) Readlink(ctx context.Context, name string) (string, error) {
	return f.ops().readlink(ctx, name)
}

// Chmod sets the permission bits of a file, and setuid, setgid and
// sticky; other mode bits are refused. It runs chmod in the sandbox.
func (f *FileSystem) Chmod(ctx context.Context, name string, mode fs.FileMode) error {
	return f.ops().chmod(ctx, name, mode)
}

// Chown sets the numeric owner and group of a file; -1 keeps one
// unchanged. Giving a file away needs root: call it on the FS of
// AsUser("root"). It runs chown in the sandbox.
func (f *FileSystem) Chown(ctx context.Context, name string, uid, gid int) error {
	return f.ops().chown(ctx, name, uid, gid)
}

// DirFS returns a read-only fs.FS of the directory dir. It implements
// fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and fs.ReadLinkFS, so that
// fs.WalkDir, fs.Glob, template.ParseFS and os.CopyFS (links included)
// work on a sandbox.
//
// It lists once and answers from the listing: the first Stat of "." or
// ReadDir of a directory runs find once for the whole tree below it, and
// later Stat, Lstat, ReadDir and ReadLink calls below it (and the Open of
// files) make no command, so fs.WalkDir over the view runs one command
// whatever the tree's size. The view so shows the tree as it was when
// listed: make a new view to see later changes. Stat of a symbolic link,
// which follows it, and calls on names not yet listed run a command each.
// Open streams a file's content through the file API (for a User, through
// base64 run as the user), read when it is opened.
//
// An fs.FS method takes no context, so the view carries ctx: every call
// made through it uses ctx, and once ctx is done every call fails with its
// error. It is safe for concurrent use.
func (f *FileSystem) DirFS(ctx context.Context, dir string) fs.FS {
	return &dirFS{ctx: ctx, fsys: f, dir: dir}
}
