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
	require.NoError(t, sb.WriteFiles(ctx, entries))

	list, err := sb.ReadDir(ctx, "dir")
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
		fi, err := sb.Stat(ctx, p)
		require.NoError(t, err, "%q", n)
		require.Equal(t, n, fi.Name())
		require.Equal(t, p, fi.Sys().(*sandbox.FileStat).Path)
		ok, err := sb.Exists(ctx, p)
		require.NoError(t, err)
		require.True(t, ok, "%q exists", n)
	}
	require.NoError(t, sb.Rename(ctx, "dir/-leading-dash", "dir/new\nname"))
	data, err := sb.ReadFileBytes(ctx, cwd+"/dir/new\nname")
	require.NoError(t, err)
	require.Equal(t, "-leading-dash", string(data))
}

func TestStatLstatAndLinks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.WriteFile(ctx, "a file", []byte("hello")))
	require.NoError(t, sb.Symlink(ctx, "a file", cwd+"/link"))

	fi, err := sb.Stat(ctx, cwd+"/link")
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular(), "Stat follows the link")
	require.EqualValues(t, 5, fi.Size())
	require.False(t, fi.ModTime().IsZero())

	li, err := sb.Lstat(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, fs.ModeSymlink, li.Mode().Type())
	st := li.Sys().(*sandbox.FileStat)
	require.Equal(t, "a file", st.LinkTarget)
	require.NotEmpty(t, st.User)

	target, err := sb.Readlink(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, "a file", target)
	real, err := sb.Realpath(ctx, "link")
	require.NoError(t, err)
	require.Equal(t, path.Join(cwd, "a file"), real)

	require.NoError(t, sb.Symlink(ctx, "nowhere", "dangling"))
	_, err = sb.Stat(ctx, "dangling")
	require.ErrorIs(t, err, fs.ErrNotExist, "a dangling link does not exist for Stat")
	ok, err := sb.Exists(ctx, "dangling")
	require.NoError(t, err)
	require.False(t, ok)
	_, err = sb.Lstat(ctx, "dangling")
	require.NoError(t, err, "but Lstat sees the link")

	_, err = sb.Readlink(ctx, "a file")
	require.ErrorIs(t, err, syscall.EINVAL, "not a link")
}

func TestChangeCallsOnRealTools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.WriteFile(ctx, "f", []byte("one")))

	require.NoError(t, sb.AppendFile(ctx, "f", []byte("+two")))
	require.NoError(t, sb.AppendFile(ctx, "g", []byte("new")))
	require.NoError(t, sb.CopyFile(ctx, "f", "copy"))
	data, err := sb.ReadFileBytes(ctx, "copy")
	require.NoError(t, err)
	require.Equal(t, "one+two", string(data))

	require.NoError(t, sb.Chmod(ctx, "copy", 0o640|fs.ModeSetgid))
	fi, err := sb.Stat(ctx, "copy")
	require.NoError(t, err)
	require.Equal(t, 0o640|fs.ModeSetgid, fi.Mode())
	st := fi.Sys().(*sandbox.FileStat)
	require.NoError(t, sb.Chown(ctx, "copy", st.UID, st.GID), "giving a file to its owner")

	tmp, err := sb.MkdirTemp(ctx, cwd, "job-*.d")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(path.Base(tmp), "job-") && strings.HasSuffix(tmp, ".d"), tmp)
	dfi, err := sb.Stat(ctx, tmp)
	require.NoError(t, err)
	require.True(t, dfi.IsDir())

	require.NoError(t, sb.WriteFiles(ctx, []files.Entry{files.FromBytes("tree/a/b/c.txt", []byte("c")), files.FromBytes("tree/top", []byte("t"))}))
	var walked []string
	for e, err := range sb.Walk(ctx, "tree") {
		require.NoError(t, err)
		walked = append(walked, e.Path)
	}
	require.ElementsMatch(t, []string{"tree/a", "tree/a/b", "tree/a/b/c.txt", "tree/top"}, walked)

	err = sb.Remove(ctx, "tree")
	require.ErrorIs(t, err, syscall.ENOTEMPTY, "Remove leaves a full directory alone")
	require.NoError(t, sb.RemoveAll(ctx, "tree"))
	require.NoError(t, sb.RemoveAll(ctx, "tree"), "removing what is gone is not an error")
	require.NoError(t, sb.Remove(ctx, "g"))
	ok, err := sb.Exists(ctx, "g")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestFileCallErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, _ := localSandbox(t)
	require.NoError(t, sb.WriteFile(ctx, "here", []byte("x")))

	missing := []struct {
		op   string
		call func() error
	}{
		{"stat", func() error { _, err := sb.Stat(ctx, "gone"); return err }},
		{"lstat", func() error { _, err := sb.Lstat(ctx, "gone"); return err }},
		{"readdir", func() error { _, err := sb.ReadDir(ctx, "gone"); return err }},
		{"remove", func() error { return sb.Remove(ctx, "gone") }},
		{"rename", func() error { return sb.Rename(ctx, "gone", "else") }},
		{"copyfile", func() error { return sb.CopyFile(ctx, "gone", "else") }},
		{"chmod", func() error { return sb.Chmod(ctx, "gone", 0o600) }},
		{"chown", func() error { return sb.Chown(ctx, "gone", 0, 0) }},
		{"readlink", func() error { _, err := sb.Readlink(ctx, "gone"); return err }},
		{"realpath", func() error { _, err := sb.Realpath(ctx, "gone"); return err }},
		{"walk", func() error {
			for _, err := range sb.Walk(ctx, "gone") {
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

	err := sb.Symlink(ctx, "x", "here")
	require.ErrorIs(t, err, fs.ErrExist)
	_, err = sb.ReadDir(ctx, "here")
	require.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = sb.MkdirTemp(ctx, "/nonexistent-dir", "x")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestFileCallPermissionDenied plays the sandbox's refusal: the message of
// the tool decides the error.
func TestFileCallPermissionDenied(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t)
	denied := sandboxtest.Reply{Stderr: "tool: cannot access '/root/x': Permission denied\n", ExitCode: 1}
	for _, name := range []string{"find", "rm", "mv", "cp", "chmod", "ln", "realpath", "test"} {
		e.handle(name, denied)
	}
	e.handle("chown", sandboxtest.Reply{Stderr: "chown: changing ownership of '/root/x': Operation not permitted\n", ExitCode: 1})
	sb := e.create("")
	checks := map[string]error{}
	_, checks["stat"] = sb.Stat(ctx, "/root/x")
	_, checks["readdir"] = sb.ReadDir(ctx, "/root/x")
	checks["remove"] = sb.Remove(ctx, "/root/x")
	checks["rename"] = sb.Rename(ctx, "/root/x", "/tmp/y")
	checks["copyfile"] = sb.CopyFile(ctx, "/root/x", "/tmp/y")
	checks["chmod"] = sb.Chmod(ctx, "/root/x", 0o600)
	checks["chown"] = sb.Chown(ctx, "/root/x", 1000, -1)
	checks["symlink"] = sb.Symlink(ctx, "t", "/root/x")
	_, checks["realpath"] = sb.Realpath(ctx, "/root/x")
	_, checks["exists"] = sb.Exists(ctx, "/root/x")
	for op, err := range checks {
		if op == "exists" {
			require.NoError(t, err, "exit 1 of test means false")
			continue
		}
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
	_, err := sb.Stat(ctx, "")
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.Remove(ctx, "a\x00b"), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.Rename(ctx, "a", ""), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.Chmod(ctx, "a", fs.ModeDir|0o755), sandbox.ErrInvalidInput)
	require.ErrorIs(t, sb.Chown(ctx, "a", -2, 0), sandbox.ErrInvalidInput)
	_, err = sb.MkdirTemp(ctx, "/tmp", "a/b")
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	require.Len(t, e.srv.Requests(), before, "refused before any request")
}

func TestDirFSWorksWithTheStandardLibrary(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, cwd := localSandbox(t)
	require.NoError(t, sb.WriteFiles(ctx, []files.Entry{
		files.FromBytes("site/index.tmpl", []byte(`{{define "index"}}Hello {{.}}{{end}}`)),
		files.FromBytes("site/parts/footer.tmpl", []byte(`{{define "footer"}}bye{{end}}`)),
		files.FromBytes("site/notes.txt", []byte("n")),
	}))
	fsys := sb.DirFS(ctx, cwd+"/site")
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
