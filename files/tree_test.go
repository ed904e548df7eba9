package files

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// summary maps destination paths to contents and modes.
type summary map[string]string

func summarize(t *testing.T, entries []Entry) summary {
	t.Helper()
	got := summary{}
	data := archive(t, entries)
	for name, c := range contents(t, data) {
		got[name] = c
	}
	for _, e := range entries {
		name, err := archiveName(cwd, e.Path())
		require.NoError(t, err)
		got[name] += " " + e.Mode().String()
	}
	return got
}

func paths(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Path())
	}
	return out
}

func testFS() fstest.MapFS {
	return fstest.MapFS{
		"site/index.html":         {Data: []byte("<h1>hi</h1>"), Mode: 0o644},
		"site/js/app.js":          {Data: []byte("run()"), Mode: 0o600},
		"site/bin/tool":           {Data: []byte("#!"), Mode: 0o755},
		"site/empty":              {Mode: fs.ModeDir | 0o755},
		"site/.git/HEAD":          {Data: []byte("ref"), Mode: 0o644},
		"site/link-inside":        {Data: []byte("js/app.js"), Mode: fs.ModeSymlink},
		"site/js/link-up":         {Data: []byte("../index.html"), Mode: fs.ModeSymlink},
		"site/link-chain":         {Data: []byte("link-inside"), Mode: fs.ModeSymlink},
		"site/link-dir":           {Data: []byte("js"), Mode: fs.ModeSymlink},
		"site/link-via-dir":       {Data: []byte("link-dir/app.js"), Mode: fs.ModeSymlink},
		"site/link-dotdot-inside": {Data: []byte("js/../index.html"), Mode: fs.ModeSymlink},
		"secret.txt":              {Data: []byte("secret"), Mode: 0o600},
		"site/dev":                {Mode: fs.ModeDevice},
	}
}

func TestFromFS(t *testing.T) {
	t.Parallel()
	entries, err := FromFS("www", testFS(), "site", TreeParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"www/.git/HEAD", "www/bin/tool", "www/index.html", "www/js/app.js"}, paths(entries))
	assert.Equal(t, summary{
		"vercel/sandbox/www/.git/HEAD":  "ref -rw-r--r--",
		"vercel/sandbox/www/bin/tool":   "#! -rwxr-xr-x",
		"vercel/sandbox/www/index.html": "<h1>hi</h1> -rw-r--r--",
		"vercel/sandbox/www/js/app.js":  "run() -rw-------",
	}, summarize(t, entries))

	// Whole FS, absolute destination, filter.
	entries, err = FromFS("/srv", testFS(), ".", TreeParams{Filter: func(rel string, d fs.DirEntry) bool {
		return d.Name() != ".git" && rel != "site/bin"
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"/srv/secret.txt", "/srv/site/index.html", "/srv/site/js/app.js"}, paths(entries))

	// Empty destination: the session's working directory.
	entries, err = FromFS("", testFS(), "site/js", TreeParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app.js"}, paths(entries))
}

func TestFromFSFollowSymlinks(t *testing.T) {
	t.Parallel()
	entries, err := FromFS("www", testFS(), "site", TreeParams{
		Symlinks: FollowSymlinks,
		Filter:   func(_ string, d fs.DirEntry) bool { return d.Name() != ".git" },
	})
	require.NoError(t, err)
	assert.Equal(t, summary{
		"vercel/sandbox/www/bin/tool":           "#! -rwxr-xr-x",
		"vercel/sandbox/www/index.html":         "<h1>hi</h1> -rw-r--r--",
		"vercel/sandbox/www/js/app.js":          "run() -rw-------",
		"vercel/sandbox/www/js/link-up":         "<h1>hi</h1> -rw-r--r--",
		"vercel/sandbox/www/link-chain":         "run() -rw-------",
		"vercel/sandbox/www/link-inside":        "run() -rw-------",
		"vercel/sandbox/www/link-via-dir":       "run() -rw-------",
		"vercel/sandbox/www/link-dotdot-inside": "<h1>hi</h1> -rw-r--r--",
	}, summarize(t, entries), "link-dir (a directory) is skipped")
}

func TestFromFSSymlinksNeverEscape(t *testing.T) {
	t.Parallel()
	for name, target := range map[string]string{
		"up":       "../secret.txt",
		"abs":      "/etc/passwd",
		"deep":     "js/../../secret.txt",
		"dangling": "missing",
		"loop":     "loop",
		"empty":    "",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fsys := testFS()
			fsys["site/bad"] = &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink}
			_, err := FromFS("www", fsys, "site", TreeParams{Symlinks: FollowSymlinks})
			var ie *apierr.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, "root", ie.Field)
			assert.Contains(t, err.Error(), `"bad"`)

			// Skipped by default, an error with RejectSymlinks.
			entries, err := FromFS("www", fsys, "site", TreeParams{})
			require.NoError(t, err)
			assert.NotContains(t, paths(entries), "www/bad")
			_, err = FromFS("www", fsys, "site", TreeParams{Symlinks: RejectSymlinks})
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)
		})
	}
}

func TestFromFSErrors(t *testing.T) {
	t.Parallel()
	_, err := FromFS("x", testFS(), "/site", TreeParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = FromFS("x", testFS(), "site/../secret.txt", TreeParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = FromFS("x", testFS(), "secret.txt", TreeParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = FromFS("x", testFS(), "missing", TreeParams{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = FromFS("x", nil, ".", TreeParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
}

func TestFromFSIsLazy(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"a.txt": {Data: []byte("old")}}
	entries, err := FromFS("", fsys, ".", TreeParams{})
	require.NoError(t, err)
	fsys["a.txt"] = &fstest.MapFile{Data: []byte("new")}
	assert.Equal(t, map[string]string{"vercel/sandbox/a.txt": "new"}, contents(t, archive(t, entries)))
	delete(fsys, "a.txt")
	err = WriteTarGz(context.Background(), io.Discard, cwd, entries, WriteParams{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// countingFS counts the files opened.
type countingFS struct {
	fs.FS
	opened, open int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && !st.IsDir() {
			c.opened++
			c.open++
			return &countingFile{File: f, fs: c}, nil
		}
	}
	return f, err
}

type countingFile struct {
	fs.File
	fs *countingFS
}

func (f *countingFile) Close() error {
	f.fs.open--
	return f.File.Close()
}

func TestFromFSOpensOneFileAtATime(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{}
	for _, n := range []string{"a", "b/c", "b/d", "e/f/g"} {
		fsys[n] = &fstest.MapFile{Data: []byte(n)}
	}
	cfs := &countingFS{FS: fsys}
	entries, err := FromFS("", cfs, ".", TreeParams{})
	require.NoError(t, err)
	assert.Zero(t, cfs.opened, "walking opens no file")
	var maxOpen int
	err = WriteTarGz(context.Background(), io.Discard, cwd, entries, WriteParams{ProgressInterval: -1, Progress: func(Progress) {
		maxOpen = max(maxOpen, cfs.open)
	}})
	require.NoError(t, err)
	assert.Equal(t, 4, cfs.opened)
	assert.Zero(t, cfs.open, "every file was closed")
	assert.LessOrEqual(t, maxOpen, 1)
}

func TestFromDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "project")
	outside := filepath.Join(base, "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	write := func(rel, content string, mode fs.FileMode) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	write("main.go", "package main", 0o644)
	write("scripts/build.sh", "#!/bin/sh", 0o755)
	write("nested/deep/x.txt", "x", 0o600)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	require.NoError(t, os.Symlink("main.go", filepath.Join(dir, "link-inside")))
	require.NoError(t, os.Symlink("../scripts", filepath.Join(dir, "nested", "link-dir")))
	escaping := filepath.Join(dir, "link-outside")

	entries, err := FromDir("app", dir, TreeParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app/main.go", "app/nested/deep/x.txt", "app/scripts/build.sh"}, paths(entries))
	assert.Equal(t, summary{
		"vercel/sandbox/app/main.go":           "package main -rw-r--r--",
		"vercel/sandbox/app/nested/deep/x.txt": "x -rw-------",
		"vercel/sandbox/app/scripts/build.sh":  "#!/bin/sh -rwxr-xr-x",
	}, summarize(t, entries))

	entries, err = FromDir("app", dir, TreeParams{Symlinks: FollowSymlinks})
	require.NoError(t, err)
	assert.Equal(t, []string{"app/link-inside", "app/main.go", "app/nested/deep/x.txt", "app/scripts/build.sh"}, paths(entries))
	assert.Equal(t, "package main", contents(t, archive(t, entries))["vercel/sandbox/app/link-inside"])

	_, err = FromDir("app", dir, TreeParams{Symlinks: RejectSymlinks})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)

	// Links that leave the directory are never followed.
	for _, target := range []string{outside, "../outside.txt", "nested/../../outside.txt"} {
		_ = os.Remove(escaping)
		require.NoError(t, os.Symlink(target, escaping))
		_, err = FromDir("app", dir, TreeParams{Symlinks: FollowSymlinks})
		var ie *apierr.InputError
		require.ErrorAs(t, err, &ie, "target %s", target)
		assert.Equal(t, "localDir", ie.Field)
		entries, err = FromDir("app", dir, TreeParams{})
		require.NoError(t, err)
		assert.NotContains(t, paths(entries), "app/link-outside")
	}

	// FromDir of a relative path and of a file.
	_, err = FromDir("app", filepath.Join(dir, "main.go"), TreeParams{})
	assert.Error(t, err)
	_, err = FromDir("app", "", TreeParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
}

func TestFromDirOpensInsideRootAtWriteTime(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	outside := filepath.Join(base, "secret")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	f := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(f, []byte("public"), 0o644))

	entries, err := FromDir("", dir, TreeParams{})
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// The file is swapped for a link to outside the directory after the
	// walk: writing must not read through it.
	require.NoError(t, os.Remove(f))
	require.NoError(t, os.Symlink(outside, f))
	var buf bytes.Buffer
	err = WriteTarGz(context.Background(), &buf, cwd, entries, WriteParams{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.NotContains(t, buf.String(), "secret")

	// A link inside the directory is fine.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "g"), []byte("public"), 0o644))
	require.NoError(t, os.Remove(f))
	require.NoError(t, os.Symlink("g", f))
	assert.Equal(t, "public", contents(t, archive(t, entries))["vercel/sandbox/f"])
}

func TestFromDirSkipsSpecialFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o644))
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	entries, err := FromDir("", dir, TreeParams{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, paths(entries))
}
