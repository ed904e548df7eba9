package sandbox_test

import (
	"errors"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"text/template"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// oddNames are file names a shell would mangle; the file calls must pass
// them through untouched.
var oddNames = []string{"with space", "new\nline", "-leading-dash", "ünïcødé ✓", "quote'\"$x"}

// localSandbox creates a sandbox whose commands are real host processes
// (GNU coreutils and findutils) in its own directory.
func localSandbox(t *testing.T) (*sandbox.Sandbox, string) {
	t.Helper()
	e := newLocalEnv(t)
	sb := e.create("")
	return sb, sb.Cwd()
}

func TestFileCallsHandleOddNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	var entries []files.Entry
	for _, n := range oddNames {
		entries = append(entries, files.FromBytes("dir/"+n, []byte(n)))
	}
	require.NoError(t, sb.FS().WriteFiles(ctx, entries, files.WriteParams{}))

	list, err := sb.FS().ReadDir(ctx, "dir")
	require.NoError(t, err)
	var names []string
	for _, d := range list {
		names = append(names, d.Name())
		require.False(t, d.IsDir())
		info, err := d.Info()
		require.NoError(t, err)
		require.EqualValues(t, len(d.Name()), info.Size(), "the size belongs to the name: no field slipped")
	}
	require.ElementsMatch(t, oddNames, names)
	require.IsIncreasing(t, names, "sorted by name, like os.ReadDir")

	for _, n := range oddNames {
		p := cwd + "/dir/" + n
		fi, err := sb.FS().Stat(ctx, p)
		require.NoError(t, err, "%q", n)
		require.Equal(t, n, fi.Name())
		require.Equal(t, p, fi.Sys().(*sandbox.FileStat).Path)
	}
	require.NoError(t, sb.FS().Rename(ctx, "dir/-leading-dash", "dir/new\nname"))
	data, err := sb.FS().ReadFile(ctx, cwd+"/dir/new\nname")
	require.NoError(t, err)
	require.Equal(t, "-leading-dash", string(data))
}

func TestStatLstatAndLinks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.FS().WriteFile(ctx, "a file", []byte("hello"), 0o644))
	require.NoError(t, sb.FS().Symlink(ctx, "a file", cwd+"/link"))

	fi, err := sb.FS().Stat(ctx, cwd+"/link")
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "Stat follows the link")
	require.EqualValues(t, 5, fi.Size())
	require.False(t, fi.ModTime().IsZero())

	li, err := sb.FS().Lstat(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, fs.ModeSymlink, li.Mode().Type())
	st := li.Sys().(*sandbox.FileStat)
	require.Equal(t, "a file", st.LinkTarget)
	require.NotEmpty(t, st.User)

	target, err := sb.FS().Readlink(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, "a file", target)

	require.NoError(t, sb.FS().Symlink(ctx, "nowhere", "dangling"))
	_, err = sb.FS().Stat(ctx, "dangling")
	require.ErrorIs(t, err, fs.ErrNotExist, "a dangling link does not exist for Stat")
	_, err = sb.FS().Lstat(ctx, "dangling")
	require.NoError(t, err, "but Lstat sees the link")

	_, err = sb.FS().Readlink(ctx, "a file")
	require.ErrorIs(t, err, syscall.EINVAL, "not a link")
}

func TestChangeCallsOnRealTools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.FS().WriteFile(ctx, "f", []byte("one"), 0o644))
	require.NoError(t, sb.FS().WriteFile(ctx, "g", []byte("new"), 0o644))
	require.NoError(t, sb.FS().Rename(ctx, "f", "copy"))
	data, err := sb.FS().ReadFile(ctx, "copy")
	require.NoError(t, err)
	require.Equal(t, "one", string(data))

	require.NoError(t, sb.FS().Chmod(ctx, "copy", 0o640|fs.ModeSetgid))
	fi, err := sb.FS().Stat(ctx, "copy")
	require.NoError(t, err)
	require.Equal(t, 0o640|fs.ModeSetgid, fi.Mode())
	st := fi.Sys().(*sandbox.FileStat)
	require.NoError(t, sb.FS().Chown(ctx, "copy", st.UID, st.GID), "giving a file to its owner")

	tmp, err := sb.FS().MkdirTemp(ctx, cwd, "job-*.d")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(path.Base(tmp), "job-") && strings.HasSuffix(tmp, ".d"), tmp)
	dfi, err := sb.FS().Stat(ctx, tmp)
	require.NoError(t, err)
	require.True(t, dfi.IsDir())

	require.NoError(t, sb.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("tree/a/b/c.txt", []byte("c")), files.FromBytes("tree/top", []byte("t"))}, files.WriteParams{}))
	var walked []string
	for e, err := range sb.FS().Walk(ctx, "tree") {
		require.NoError(t, err)
		walked = append(walked, e.Path)
	}
	require.ElementsMatch(t, []string{"tree/a", "tree/a/b", "tree/a/b/c.txt", "tree/top"}, walked)

	err = sb.FS().Remove(ctx, "tree")
	require.ErrorIs(t, err, syscall.ENOTEMPTY, "Remove leaves a full directory alone")
	require.NoError(t, sb.FS().RemoveAll(ctx, "tree"))
	require.NoError(t, sb.FS().RemoveAll(ctx, "tree"), "removing what is gone is not an error")
	require.NoError(t, sb.FS().Remove(ctx, "g"))
	_, err = sb.FS().Lstat(ctx, "g")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestFileCallErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, _ := localSandbox(t)
	require.NoError(t, sb.FS().WriteFile(ctx, "here", []byte("x"), 0o644))

	missing := []struct {
		op   string
		call func() error
	}{
		{"stat", func() error { _, err := sb.FS().Stat(ctx, "gone"); return err }},
		{"lstat", func() error { _, err := sb.FS().Lstat(ctx, "gone"); return err }},
		{"readdir", func() error { _, err := sb.FS().ReadDir(ctx, "gone"); return err }},
		{"remove", func() error { return sb.FS().Remove(ctx, "gone") }},
		{"rename", func() error { return sb.FS().Rename(ctx, "gone", "else") }},
		{"chmod", func() error { return sb.FS().Chmod(ctx, "gone", 0o600) }},
		{"chown", func() error { return sb.FS().Chown(ctx, "gone", 0, 0) }},
		{"readlink", func() error { _, err := sb.FS().Readlink(ctx, "gone"); return err }},
		{"walk", func() error {
			for _, err := range sb.FS().Walk(ctx, "gone") {
				return err
			}
			return nil
		}},
	}
	for _, m := range missing {
		err := m.call()
		require.ErrorIs(t, err, fs.ErrNotExist, m.op)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe, m.op)
		require.Equal(t, m.op, pe.Op)
		require.Equal(t, "gone", pe.Path)
		var exit *command.ExitError
		require.ErrorAs(t, err, &exit, "%s: the command's exit stays reachable", m.op)
	}

	err := sb.FS().Symlink(ctx, "x", "here")
	require.ErrorIs(t, err, fs.ErrExist)
	_, err = sb.FS().ReadDir(ctx, "here")
	require.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = sb.FS().MkdirTemp(ctx, "/nonexistent-dir", "x")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestFileCallPermissionDenied plays the sandbox's refusal: the message of
// the tool decides the error.
func TestFileCallPermissionDenied(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	denied := sandboxtest.Reply{Stderr: "tool: cannot access '/root/x': Permission denied\n", ExitCode: 1}
	for _, name := range []string{"find", "rm", "mv", "cp", "chmod", "ln", "mkdir"} {
		e.handle(name, denied)
	}
	e.handle("chown", sandboxtest.Reply{Stderr: "chown: changing ownership of '/root/x': Operation not permitted\n", ExitCode: 1})
	sb := e.create("")
	checks := map[string]error{}
	_, checks["stat"] = sb.FS().Stat(ctx, "/root/x")
	_, checks["readdir"] = sb.FS().ReadDir(ctx, "/root/x")
	checks["remove"] = sb.FS().Remove(ctx, "/root/x")
	checks["rename"] = sb.FS().Rename(ctx, "/root/x", "/tmp/y")
	checks["chmod"] = sb.FS().Chmod(ctx, "/root/x", 0o600)
	checks["chown"] = sb.FS().Chown(ctx, "/root/x", 1000, -1)
	checks["symlink"] = sb.FS().Symlink(ctx, "t", "/root/x")
	checks["mkdir"] = sb.FS().Mkdir(ctx, "/root/x", 0o700)
	for op, err := range checks {
		require.ErrorIs(t, err, fs.ErrPermission, op)
		require.Contains(t, err.Error(), "/root/x", op)
	}
	for _, c := range e.script.Calls() {
		if c.Name == "find" && c.Args[0] == "-L" {
			require.Equal(t, []string{"-L", "/root/x", "-maxdepth", "0", "-printf"}, c.Args[:5], "paths are argv, never a shell line")
		}
	}
}

func TestFileCallsValidateInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	sb := e.create("")
	before := len(e.srv.Requests())
	_, err := sb.FS().Stat(ctx, "")
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.FS().Remove(ctx, "a\x00b"), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.FS().Rename(ctx, "a", ""), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.FS().Chmod(ctx, "a", fs.ModeDir|0o755), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.FS().Chown(ctx, "a", -2, 0), sandbox.ErrInvalidInput)
	_, err = sb.FS().MkdirTemp(ctx, "/tmp", "a/b")
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	require.Len(t, e.srv.Requests(), before, "refused before any request")
}

func TestDirFSWorksWithTheStandardLibrary(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.FS().WriteFiles(ctx, []files.Entry{
		files.FromBytes("site/index.tmpl", []byte(`{{define "index"}}Hello {{.}}{{end}}`)),
		files.FromBytes("site/parts/footer.tmpl", []byte(`{{define "footer"}}bye{{end}}`)),
		files.FromBytes("site/notes.txt", []byte("n")),
	}, files.WriteParams{}))
	fsys := sb.FS().DirFS(ctx, cwd+"/site")
	require.NoError(t, fstest.TestFS(fsys, "index.tmpl", "parts/footer.tmpl", "notes.txt"))

	matches, err := fs.Glob(fsys, "*/*.tmpl")
	require.NoError(t, err)
	require.Equal(t, []string{"parts/footer.tmpl"}, matches)

	tmpl, err := template.ParseFS(fsys, "*.tmpl", "parts/*.tmpl")
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, tmpl.ExecuteTemplate(&out, "index", "gopher"))
	require.Equal(t, "Hello gopher", out.String())

	_, err = fs.Stat(fsys, "absent")
	require.ErrorIs(t, err, fs.ErrNotExist)
	var pe *fs.PathError
	require.True(t, errors.As(err, &pe) && pe.Path == "absent", "errors name the fs.FS path")
	_, err = fsys.Open("../escape")
	require.ErrorIs(t, err, fs.ErrInvalid)
}
