package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
)

// User acts as one Linux user of a sandbox: its commands run as that user
// (through sudo -u, as the official SDK does), in its home directory by
// default, and its file calls see what that user may see. Get one from
// Sandbox.CreateUser or Sandbox.AsUser. It is safe for concurrent use.
type User struct {
	sb   *Sandbox
	name string
	home string

	mu           sync.Mutex
	primaryGroup string // the user's group, once looked up
	defaultGroup string // the sandbox default user's group, once looked up
}

// AsUser returns a handle acting as an existing user; nothing is checked
// in the sandbox. The name is validated as for CreateUser.
func (s *Sandbox) AsUser(name string) (*User, error) {
	if err := validateAccount("name", name); err != nil {
		return nil, err
	}
	home := "/home/" + name
	if name == "root" {
		home = "/root"
	}
	return &User{sb: s, name: name, home: home}, nil
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Home returns the user's home directory, where its commands start and
// its relative paths point.
func (u *User) Home() string { return u.home }

// userScript changes to the directory in $1 and runs the rest. "--" ends
// exec's options: a command named "-a", "-c" or "--help" is the program
// to run, not an option of exec.
const userScript = `cd "$1" || exit 1; shift; exec -- "$@"`

// asUser rewrites cmd to run as the user: sudo resets the environment,
// so cmd.Env is handed over through env(1), and the working directory
// (cmd.Dir, or the home directory) is entered by a fixed script that gets
// every value as an argument. A Cmd with Sudo set runs as root, unchanged
// (package command does not call asUser for it).
//
// Whatever its name, the command must run as itself, as through
// Sandbox.Command. cd reads "-" as the previous directory and looks other
// relative names up in CDPATH, so a relative directory is given as
// "./dir". env(1) takes every word holding "=" as one more variable, and
// has no way to end them, so a name holding "=" follows "nice -n 0 --",
// which changes nothing and runs the word after "--" as it is; nice is
// named by its path, which cmd.Env's PATH cannot hide.
func (u *User) asUser(cmd *command.Cmd) (name string, args []string, env map[string]string, dir string) {
	dir = cmd.Dir
	if dir == "" {
		dir = u.home
	}
	if !strings.HasPrefix(dir, "/") {
		dir = "./" + dir
	}
	args = []string{"-u", u.name, "--", "bash", "-c", userScript, "bash", dir}
	if len(cmd.Env) > 0 {
		args = append(args, "env", "--")
		for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
			args = append(args, k+"="+cmd.Env[k])
		}
		if strings.Contains(cmd.Name, "=") {
			args = append(args, "/usr/bin/nice", "-n", "0", "--")
		}
	}
	return "sudo", append(append(args, cmd.Name), cmd.Args...), nil, ""
}

// Command returns a command that runs name with args as the user, as
// Sandbox.Command does: in the user's home directory unless Dir is set,
// with Env handed over through sudo. A command with Sudo set runs as root.
func (u *User) Command(name string, args ...string) *command.Cmd {
	return bindCmd(&command.Cmd{Name: name, Args: args}, u.sb.conn, u.asUser)
}

// run runs cmd attached as the user.
func (u *User) run(ctx context.Context, cmd *command.Cmd) (*command.Result, error) {
	if cmd == nil {
		return nil, (*command.Cmd)(nil).Validate()
	}
	return bindCmd(cmd, u.sb.conn, u.asUser).Run(ctx)
}

// resolve makes p absolute against the home directory.
func (u *User) resolve(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return path.Join(u.home, p)
}

// groups returns the user's primary group and the sandbox default user's
// group, looking them up once.
func (u *User) groups(ctx context.Context) (primary, dflt string, err error) {
	u.mu.Lock()
	primary, dflt = u.primaryGroup, u.defaultGroup
	u.mu.Unlock()
	if primary == "" {
		out, err := u.sb.Command("id", "-gn", "--", u.name).Output(ctx)
		if err != nil {
			return "", "", fmt.Errorf("vercel sandbox: finding the group of user %q: %w", u.name, err)
		}
		primary = strings.TrimSpace(string(out))
	}
	if dflt == "" {
		if _, dflt, err = u.sb.defaultAccount(ctx); err != nil {
			return "", "", err
		}
	}
	u.mu.Lock()
	u.primaryGroup, u.defaultGroup = primary, dflt
	u.mu.Unlock()
	return primary, dflt, nil
}

// WriteFiles uploads entries through the file API, then gives them to the
// user: relative paths are relative to the home directory, the files are
// owned by the user and its group, and directories made below the home
// directory are the user's with mode 770, as the official SDK leaves them.
func (u *User) WriteFiles(ctx context.Context, entries []files.Entry, opts ...files.Option) error {
	if len(entries) == 0 {
		return nil
	}
	if err := files.Validate(u.home, entries, opts...); err != nil {
		return err
	}
	abs := make([]files.Entry, len(entries))
	paths := make([]string, len(entries))
	for i, e := range entries {
		abs[i] = e.WithPath(u.resolve(e.Path()))
		paths[i] = abs[i].Path()
	}
	if err := u.sb.WriteFiles(ctx, abs, opts...); err != nil {
		return err
	}
	primary, dflt, err := u.groups(ctx)
	if err != nil {
		return err
	}
	if err := u.asRoot(ctx, "chown", append([]string{u.name + ":" + primary, "--"}, paths...)...); err != nil {
		return err
	}
	dirs := u.dirsBelowHome(paths)
	if len(dirs) == 0 {
		return nil
	}
	if err := u.asRoot(ctx, "chown", append([]string{u.name + ":" + dflt, "--"}, dirs...)...); err != nil {
		return err
	}
	return u.asRoot(ctx, "chmod", append([]string{"770", "--"}, dirs...)...)
}

// WriteFile uploads one file with mode 0644 as the user.
func (u *User) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := checkFilePath("path", path); err != nil {
		return err
	}
	return u.WriteFiles(ctx, []files.Entry{files.FromBytes(path, data)})
}

func (u *User) asRoot(ctx context.Context, name string, args ...string) error {
	cmd := u.sb.Command(name, args...)
	cmd.Sudo = true
	_, err := cmd.Run(ctx)
	return err
}

// dirsBelowHome returns the directories strictly between the home
// directory and each path.
func (u *User) dirsBelowHome(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for d := path.Dir(p); strings.HasPrefix(d, u.home+"/"); d = path.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// ReadFileBytes reads a whole file as the user, so the user's own
// permissions apply (the file API may not reach a file it keeps private).
// It runs base64 as the user, as the official SDK does; relative paths are
// relative to the home directory. A missing file gives an error matching
// fs.ErrNotExist. Files are read whole, up to 48 MiB.
func (u *User) ReadFileBytes(ctx context.Context, path string) ([]byte, error) {
	if err := checkPath("path", path); err != nil {
		return nil, err
	}
	p := u.resolve(path)
	out, err := u.fileOps().exec(ctx, "read", p, "base64", "--", p)
	if err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(string(out))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	return data, nil
}

// ReadFile is ReadFileBytes as a stream. The caller must close it.
func (u *User) ReadFile(ctx context.Context, path string) (io.ReadCloser, error) {
	data, err := u.ReadFileBytes(ctx, path)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (u *User) fileOps() fileOps {
	return fileOps{run: u.run, read: u.ReadFileBytes, write: func(ctx context.Context, entries []files.Entry) error {
		return u.WriteFiles(ctx, entries)
	}}
}

// The file calls of Sandbox, run as the user. Relative paths are
// relative to the home directory.

// Stat is Sandbox.Stat as the user.
func (u *User) Stat(ctx context.Context, path string) (fs.FileInfo, error) {
	return u.fileOps().stat(ctx, "stat", path, true)
}

// Lstat is Sandbox.Lstat as the user.
func (u *User) Lstat(ctx context.Context, path string) (fs.FileInfo, error) {
	return u.fileOps().stat(ctx, "lstat", path, false)
}

// Exists is Sandbox.Exists as the user.
func (u *User) Exists(ctx context.Context, path string) (bool, error) {
	return u.fileOps().exists(ctx, path)
}

// ReadDir is Sandbox.ReadDir as the user.
func (u *User) ReadDir(ctx context.Context, path string) ([]fs.DirEntry, error) {
	return u.fileOps().readDir(ctx, path)
}

// Walk is Sandbox.Walk as the user.
func (u *User) Walk(ctx context.Context, root string) iter.Seq2[WalkEntry, error] {
	return u.fileOps().walk(ctx, root)
}

// Remove is Sandbox.Remove as the user.
func (u *User) Remove(ctx context.Context, path string) error {
	return u.fileOps().remove(ctx, path)
}

// RemoveAll is Sandbox.RemoveAll as the user.
func (u *User) RemoveAll(ctx context.Context, path string) error {
	return u.fileOps().removeAll(ctx, path)
}

// Rename is Sandbox.Rename as the user.
func (u *User) Rename(ctx context.Context, oldpath, newpath string) error {
	return u.fileOps().rename(ctx, oldpath, newpath)
}

// CopyFile is Sandbox.CopyFile as the user.
func (u *User) CopyFile(ctx context.Context, src, dst string) error {
	return u.fileOps().copyFile(ctx, src, dst)
}

// Chmod is Sandbox.Chmod as the user.
func (u *User) Chmod(ctx context.Context, path string, mode fs.FileMode) error {
	return u.fileOps().chmod(ctx, path, mode)
}

// Chown is Sandbox.Chown as the user.
func (u *User) Chown(ctx context.Context, path string, uid, gid int) error {
	return u.fileOps().chown(ctx, path, uid, gid)
}

// Symlink is Sandbox.Symlink as the user.
func (u *User) Symlink(ctx context.Context, oldname, newname string) error {
	return u.fileOps().symlink(ctx, oldname, newname)
}

// Readlink is Sandbox.Readlink as the user.
func (u *User) Readlink(ctx context.Context, path string) (string, error) {
	return u.fileOps().readlink(ctx, path)
}

// Realpath is Sandbox.Realpath as the user.
func (u *User) Realpath(ctx context.Context, path string) (string, error) {
	return u.fileOps().realpath(ctx, path)
}

// MkdirTemp is Sandbox.MkdirTemp as the user.
func (u *User) MkdirTemp(ctx context.Context, dir, pattern string) (string, error) {
	return u.fileOps().mkdirTemp(ctx, dir, pattern)
}

// AppendFile is Sandbox.AppendFile as the user: the file is read and
// written back as the user.
func (u *User) AppendFile(ctx context.Context, path string, data []byte) error {
	return u.fileOps().appendFile(ctx, path, data)
}

// DirFS is Sandbox.DirFS as the user.
func (u *User) DirFS(ctx context.Context, dir string) fs.FS {
	return &dirFS{ctx: ctx, ops: u.fileOps(), dir: dir}
}
