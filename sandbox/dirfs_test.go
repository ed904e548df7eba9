package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// bigSize is the size of the large file of the trees below.
const bigSize = 50 << 20

// makeTree makes, on the host, the tree a host-path sandbox sees: odd
// names, nested directories, links of every kind and, with big, a 50 MB
// file.
func makeTree(t *testing.T, root string, big bool) {
	t.Helper()
	names := append([]string{"back\\slash", "-dash"}, oddNames...)
	for _, n := range names {
		p := filepath.Join(root, "odd", n)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(n), 0o640))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "a", "b", "empty"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a", "b", "c.txt"), []byte("c"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Symlink("a/b/c.txt", filepath.Join(root, "link-file")))
	require.NoError(t, os.Symlink("a", filepath.Join(root, "link-dir")))
	require.NoError(t, os.Symlink("../c.txt", filepath.Join(root, "a", "b", "empty", "up")))
	if big {
		require.NoError(t, os.Symlink("nowhere", filepath.Join(root, "dangling")))
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(root, "absolute")))
		f, err := os.Create(filepath.Join(root, "big.bin"))
		require.NoError(t, err)
		chunk := make([]byte, 1<<20)
		for i := range chunk {
			chunk[i] = byte(i * 7 / 3)
		}
		for range bigSize / len(chunk) {
			_, err := f.Write(chunk)
			require.NoError(t, err)
		}
		require.NoError(t, f.Close())
	}
}

// treeOf describes a local tree: each path's type, link target or
// content hash (os.CopyFS applies the umask to permissions).
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		require.NoError(t, err)
		desc := info.Mode().Type().String()
		switch {
		case d.Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			require.NoError(t, err)
			desc += " -> " + target
		case d.Type().IsRegular():
			f, err := os.Open(p)
			require.NoError(t, err)
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			require.NoError(t, err)
			desc += fmt.Sprintf(" %x", h.Sum(nil))
		}
		out[rel] = desc
		return nil
	}))
	return out
}

// alone reruns the calling test in a process of its own and reports
// whether this is that process: what totalAlloc counts is then the test's
// own work, not that of tests running beside it or of their leftovers.
func alone(t *testing.T) bool {
	t.Helper()
	if os.Getenv("SANDBOX_TEST_ALONE") == t.Name() {
		return true
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_ALONE="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("%s alone:\n%s", t.Name(), out)
	require.NoError(t, err)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the test ran")
	return false
}

// totalAlloc returns the bytes allocated so far by the whole process (the
// client and the in-process server).
func totalAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func TestDirFSCopyFSRoundTrip(t *testing.T) {
	if !alone(t) {
		return
	}
	e := newLocalEnv(t)
	sb := e.create("copyfs")
	src := filepath.Join(sb.Cwd(), "tree")
	makeTree(t, src, true)
	dst := filepath.Join(t.TempDir(), "copy")

	commands := e.srv.CommandCount()
	before := totalAlloc()
	require.NoError(t, os.CopyFS(dst, sb.FS().DirFS(t.Context(), src)))
	alloc := totalAlloc() - before

	require.Equal(t, treeOf(t, src), treeOf(t, dst), "the copy is the tree: names, links and contents")
	require.Equal(t, 1, e.srv.CommandCount()-commands, "one find lists the tree; files are read through the file API")
	t.Logf("os.CopyFS allocated %d bytes", alloc)
	require.Less(t, alloc, uint64(4<<20), "copying a 50 MB file allocates a few MiB at most (%d bytes)", alloc)
}

func TestDirFSOpenStreams(t *testing.T) {
	if !alone(t) {
		return
	}
	e := newLocalEnv(t)
	sb := e.create("stream")
	src := filepath.Join(sb.Cwd(), "tree")
	makeTree(t, src, true)
	fsys := sb.FS().DirFS(t.Context(), src)
	_, err := fs.Stat(fsys, ".")
	require.NoError(t, err)

	before := totalAlloc()
	f, err := fsys.Open("big.bin")
	require.NoError(t, err)
	buf := make([]byte, 4<<10)
	_, err = io.ReadFull(f, buf)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	alloc := totalAlloc() - before
	t.Logf("a 4 KiB read allocated %d bytes", alloc)
	require.Less(t, alloc, uint64(512<<10), "a 4 KiB read of a 50 MB file does not read the file (%d bytes)", alloc)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.EqualValues(t, bigSize, fi.Size())
}

func TestDirFSWalkDirRunsOneCommand(t *testing.T) {
	e := newLocalEnv(t)
	sb := e.create("walk")
	src := filepath.Join(sb.Cwd(), "tree")
	makeTree(t, src, false)
	fsys := sb.FS().DirFS(t.Context(), src)

	commands := e.srv.CommandCount()
	var walked []string
	require.NoError(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		walked = append(walked, p)
		return nil
	}))
	require.Equal(t, 1, e.srv.CommandCount()-commands, "fs.WalkDir over %d entries", len(walked))
	require.Contains(t, walked, "a/b/empty/up")

	// Later calls below the listing make no command; a link is read from it.
	fi, err := fs.Lstat(fsys, "a/b/c.txt")
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), fi.Mode())
	target, err := fs.ReadLink(fsys, "a/b/empty/up")
	require.NoError(t, err)
	require.Equal(t, "../c.txt", target)
	_, err = fs.Stat(fsys, "a/missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fs.ReadDir(fsys, "a/run.sh")
	require.Error(t, err)
	require.Equal(t, 1, e.srv.CommandCount()-commands, "answered from the listing")

	// Stat follows a link, which takes a command; the listing does not
	// reach below a link, which ReadDir lists on its own.
	fi, err = fs.Stat(fsys, "link-file")
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())
	list, err := fs.ReadDir(fsys, "link-dir")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, 3, e.srv.CommandCount()-commands)

	// The view shows the tree as listed: a new view sees changes.
	require.NoError(t, os.WriteFile(filepath.Join(src, "later"), nil, 0o644))
	_, err = fs.Stat(fsys, "later")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fs.Stat(sb.FS().DirFS(t.Context(), src), "later")
	require.NoError(t, err)
}

func TestDirFSPassesFSTest(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	sb := e.create("fstest")
	src := filepath.Join(sb.Cwd(), "tree")
	makeTree(t, src, false)
	// fstest refuses a name with a backslash, which is not portable.
	require.NoError(t, os.Remove(filepath.Join(src, "odd", "back\\slash")))
	want := []string{"a/b/c.txt", "a/run.sh", "a/b/empty/up", "link-file", "odd/-dash"}
	for _, n := range oddNames {
		want = append(want, "odd/"+n)
	}
	require.NoError(t, fstest.TestFS(sb.FS().DirFS(t.Context(), src), want...))

	u, err := sb.AsUser("nobody-here")
	require.NoError(t, err)
	_ = u.FS() // the same type: see TestFileCallsHaveOneHome
}

func TestDirFSContextEndsEveryCall(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	sb := e.create("")
	ctx, cancel := context.WithCancel(t.Context())
	fsys := sb.FS().DirFS(ctx, sb.Cwd())
	_, err := fs.ReadDir(fsys, ".")
	require.NoError(t, err)
	cancel()
	_, err = fs.ReadDir(fsys, ".")
	require.ErrorIs(t, err, context.Canceled, "even an answer the listing holds")
}

// TestFileCallsHaveOneHome: Sandbox and User reach the file calls through
// the same type, and hold none of their own, so the two cannot drift.
func TestFileCallsHaveOneHome(t *testing.T) {
	t.Parallel()
	var _ func(*sandbox.Sandbox) *sandbox.FileSystem = (*sandbox.Sandbox).FS
	var _ func(*sandbox.User) *sandbox.FileSystem = (*sandbox.User).FS
	fsType := reflect.TypeFor[*sandbox.FileSystem]()
	for _, typ := range []reflect.Type{reflect.TypeFor[*sandbox.Sandbox](), reflect.TypeFor[*sandbox.User]()} {
		for i := range fsType.NumMethod() {
			m := fsType.Method(i)
			_, dup := typ.MethodByName(m.Name)
			require.False(t, dup, "%s has a file call %s of its own", typ, m.Name)
		}
	}
}

func TestWriteFileHonoursPerm(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newLocalEnv(t)
	sb := e.create("")
	cases := []struct {
		name string
		perm fs.FileMode
	}{{"private", 0o600}, {"script", 0o755}, {"shared", 0o664}}
	for _, c := range cases {
		require.NoError(t, sb.FS().WriteFile(ctx, c.name, []byte(c.name), c.perm))
		fi, err := sb.FS().Stat(ctx, c.name)
		require.NoError(t, err)
		require.Equal(t, c.perm, fi.Mode(), c.name)
	}
	// A replaced file takes the new mode, as the upload writes it anew.
	require.NoError(t, sb.FS().WriteFile(ctx, "private", []byte("again"), 0o644))
	fi, err := sb.FS().Stat(ctx, "private")
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o644), fi.Mode())
	data, err := sb.FS().ReadFile(ctx, "private")
	require.NoError(t, err)
	require.True(t, bytes.Equal([]byte("again"), data))

	require.ErrorIs(t, sb.FS().WriteFile(ctx, "dir", nil, fs.ModeDir|0o755), sandbox.ErrInvalidInput)

	// Mkdir and MkdirAll honour perm too.
	commands := e.srv.CommandCount()
	require.NoError(t, sb.FS().MkdirAll(ctx, "d/e", 0o755))
	require.Equal(t, commands, e.srv.CommandCount(), "0o755 is the file API's own mode: no command")
	require.NoError(t, sb.FS().Mkdir(ctx, "d/private", 0o700))
	require.NoError(t, sb.FS().MkdirAll(ctx, "d/x/y", 0o750))
	for p, want := range map[string]fs.FileMode{"d/e": 0o755, "d/private": 0o700, "d/x/y": 0o750} {
		fi, err := sb.FS().Stat(ctx, p)
		require.NoError(t, err)
		require.Equal(t, fs.ModeDir|want, fi.Mode(), p)
	}
	require.ErrorIs(t, sb.FS().Mkdir(ctx, "d/private", 0o700), fs.ErrExist)
	require.NoError(t, sb.FS().MkdirAll(ctx, "d/private", 0o700), "an existing directory is not an error")
}
