package sandboxtest_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// The file calls that run processes work on a scripted server without a
// script of find's output, in both path modes.
func TestScriptFileTools(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []local.Option
	}{{"virtual paths", nil}, {"host paths", []local.Option{local.WithHostPaths(true)}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			srv := sandboxtest.NewServer(t, mode.opts...)
			sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
			require.NoError(t, err)
			fsys := sb.FS()
			cwd := sb.Cwd()
			require.NoError(t, fsys.WriteFile(ctx, "a.txt", []byte("hello"), 0o640))
			require.NoError(t, fsys.MkdirAll(ctx, "d/e", 0o755))
			require.NoError(t, fsys.WriteFile(ctx, "d/e/f.txt", []byte("x"), 0o644))

			fi, err := fsys.Stat(ctx, "a.txt")
			require.NoError(t, err)
			assert.Equal(t, "a.txt", fi.Name())
			assert.Equal(t, int64(5), fi.Size())
			assert.Equal(t, fs.FileMode(0o640), fi.Mode())
			assert.False(t, fi.ModTime().IsZero())
			_, err = fsys.Stat(ctx, "missing")
			assert.ErrorIs(t, err, fs.ErrNotExist)

			entries, err := fsys.ReadDir(ctx, cwd)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			assert.Subset(t, names, []string{"a.txt", "d"}) // /vercel also holds sandbox/
			assert.IsNonDecreasing(t, names)

			var walked []string
			for e, err := range fsys.Walk(ctx, "d") {
				require.NoError(t, err)
				walked = append(walked, e.Path)
			}
			assert.Equal(t, []string{"d/e", "d/e/f.txt"}, walked)

			dir, err := fsys.MkdirTemp(ctx, cwd, "job-*.tmp")
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(dir, cwd+"/job-") && strings.HasSuffix(dir, ".tmp"), dir)
			fi, err = fsys.Stat(ctx, dir)
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
			assert.Equal(t, fs.FileMode(0o700), fi.Mode().Perm())

			require.NoError(t, fsys.Symlink(ctx, "a.txt", "link"))
			target, err := fsys.Readlink(ctx, "link")
			require.NoError(t, err)
			assert.Equal(t, "a.txt", target)
			li, err := fsys.Lstat(ctx, "link")
			require.NoError(t, err)
			assert.Equal(t, fs.ModeSymlink, li.Mode().Type())
			require.NoError(t, fsys.Symlink(ctx, "nowhere", "dangling"))
			_, err = fsys.Stat(ctx, "dangling")
			assert.ErrorIs(t, err, fs.ErrNotExist)

			require.NoError(t, fsys.Chmod(ctx, "a.txt", 0o600))
			fi, err = fsys.Stat(ctx, "a.txt")
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o600), fi.Mode())
			require.NoError(t, fsys.Rename(ctx, "a.txt", "b.txt"))
			data, err := fsys.ReadFile(ctx, "b.txt")
			require.NoError(t, err)
			assert.Equal(t, "hello", string(data))

			assert.ErrorIs(t, fsys.Remove(ctx, "d"), syscall.ENOTEMPTY)
			assert.ErrorIs(t, fsys.Remove(ctx, "missing"), fs.ErrNotExist)
			require.NoError(t, fsys.RemoveAll(ctx, "d"))
			require.NoError(t, fsys.RemoveAll(ctx, "d"), "RemoveAll of nothing is not an error")
			_, err = fsys.Stat(ctx, "d")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			require.NoError(t, fsys.Remove(ctx, "b.txt"))

			assert.Empty(t, srv.Script().Unmatched())
			calls := srv.Script().Calls()
			assert.True(t, slices.ContainsFunc(calls, func(c sandboxtest.Call) bool { return c.Name == "find" }))
		})
	}
}

// A handler registered for a file tool's command wins over it; a command
// of the same name in another form is not a file tool.
func TestScriptFileToolsYield(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := sandboxtest.NewServer(t)
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	srv.Script().Override(sandboxtest.MatchName("rm"), sandboxtest.Reply{Stderr: "rm: cannot remove 'x': Permission denied\n", ExitCode: 1})
	assert.ErrorIs(t, sb.FS().RemoveAll(ctx, "x"), fs.ErrPermission)

	res, err := sb.Command("find", ".", "-name", "x").Output(ctx)
	assert.Error(t, err, "%s", res)
	require.Len(t, srv.Script().Unmatched(), 1)
	assert.Equal(t, "find . -name x", srv.Script().Unmatched()[0].CommandLine())
}

// The file tools stay inside the sandbox's directory.
func TestScriptFileToolsConfined(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := sandboxtest.NewServer(t, local.WithHostPaths(true))
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	_, err = sb.FS().Stat(ctx, "/etc/passwd")
	assert.ErrorIs(t, err, fs.ErrPermission, "a host path outside the sandbox")
	require.NoError(t, sb.FS().Symlink(ctx, "/etc", "etc-link"))
	_, err = sb.FS().ReadDir(ctx, "etc-link/")
	assert.Error(t, err, "a link out of the sandbox is not followed")
}

// findFormat is the listing format of package sandbox.
const findFormat = `%y\0%Y\0%m\0%s\0%U\0%G\0%u\0%g\0%n\0%i\0%A@\0%T@\0%C@\0%l\0%P\0%f\0`

// The file tools print what GNU find prints, field for field (the names
// of owners aside: find reads the host's, the tools the sandbox's).
func TestScriptFindMatchesGNUFind(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("find", "--version").Output(); err != nil || !strings.Contains(string(out), "GNU findutils") {
		t.Skip("no GNU find on this host")
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "deep"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "f.txt"), []byte("data"), 0o604))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "name with\nnewline"), nil, 0o600))
	require.NoError(t, os.Symlink("sub/f.txt", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "dangling")))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	require.NoError(t, os.Chmod(filepath.Join(dir, "sub", "deep"), 0o1750|fs.ModeSticky))

	script := sandboxtest.NewScript()
	for _, args := range [][]string{
		{"-H", ".", "-printf", findFormat},
		{"-P", "./sub", "-maxdepth", "1", "-printf", findFormat},
		{"-L", "./link", "-maxdepth", "0", "-printf", findFormat},
		{"-L", "./dangling", "-maxdepth", "0", "-printf", findFormat},
		{"-P", "./loop", "-maxdepth", "0", "-printf", findFormat},
		{"-P", dir + "/sub/f.txt", "-maxdepth", "0", "-printf", findFormat},
	} {
		real := exec.Command("find", args...)
		real.Dir = dir
		want, err := real.Output()
		require.NoError(t, err, args)

		var got, stderr bytes.Buffer
		p, err := script.Start(t.Context(), &local.Cmd{Name: "find", Args: args, Dir: dir, Cwd: dir, HostCwd: dir, Stdout: &got, Stderr: &stderr})
		require.NoError(t, err)
		code, err := p.Wait()
		require.NoError(t, err)
		require.Zero(t, code, stderr.String())
		require.NotEmpty(t, findRecords(want), args)
		assert.Equal(t, findRecords(want), findRecords(got.Bytes()), "%v", args)
	}
}

// findRecords splits a listing into records, without the owners' names
// and the access time, which the listing itself may change.
func findRecords(out []byte) [][]string {
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var recs [][]string
	for i := 0; i+16 <= len(fields); i += 16 {
		r := slices.Clone(fields[i : i+16])
		r[6], r[7], r[10] = "", "", ""
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b []string) int { return strings.Compare(a[14], b[14]) })
	return recs
}
