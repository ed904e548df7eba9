package tarx

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ent is an archive entry to build.
type ent struct {
	name     string
	typ      byte
	body     string
	mode     int64
	linkname string
}

func reg(name, body string) ent { return ent{name: name, typ: tar.TypeReg, body: body, mode: 0o644} }

// build returns a gzip-compressed tar of ents.
func build(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.linkname, ModTime: time.Unix(1767000000, 0)}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		require.NoError(t, tw.WriteHeader(h))
		if e.typ == tar.TypeReg {
			_, err := io.WriteString(tw, e.body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// sandbox returns a host directory standing for a sandbox's "/", inside a
// parent holding a file that no extraction may touch.
func sandbox(t *testing.T) (root, outside string) {
	t.Helper()
	parent := t.TempDir()
	outside = filepath.Join(parent, "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("untouched"), 0o644))
	root = filepath.Join(parent, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	return root, outside
}

func assertUntouched(t *testing.T, outside string) {
	t.Helper()
	b, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "untouched", string(b))
	entries, err := os.ReadDir(filepath.Dir(outside))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing new beside the root")
}

func TestExtract(t *testing.T) {
	t.Parallel()
	root, outside := sandbox(t)
	data := build(t,
		reg("vercel/sandbox/hello.txt", "hello"),
		ent{name: "vercel/sandbox/bin/", typ: tar.TypeDir, mode: 0o750},
		ent{name: "vercel/sandbox/bin/run", typ: tar.TypeReg, body: "#!/bin/sh", mode: 0o755},
		ent{name: "etc/secret", typ: tar.TypeReg, body: "s", mode: 0o600},
		reg("./a/./b/../c.txt", "clean"),
		ent{name: "./", typ: tar.TypeDir, mode: 0o755},
		reg(strings.Repeat("long/", 50)+"x", "deep"),
		reg("données/日本語.txt", "utf8"),
	)
	hdrs, err := Extract(context.Background(), bytes.NewReader(data), root, Options{})
	require.NoError(t, err)
	require.Len(t, hdrs, 8)
	assert.Equal(t, "vercel/sandbox/hello.txt", hdrs[0].Name)
	assert.Equal(t, int64(5), hdrs[0].Size)

	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "hello", read("vercel/sandbox/hello.txt"))
	assert.Equal(t, "#!/bin/sh", read("vercel/sandbox/bin/run"))
	assert.Equal(t, "clean", read("a/c.txt"))
	assert.Equal(t, "deep", read(strings.Repeat("long/", 50)+"x"))
	assert.Equal(t, "utf8", read("données/日本語.txt"))
	for p, want := range map[string]fs.FileMode{
		"vercel/sandbox/hello.txt": 0o644,
		"vercel/sandbox/bin/run":   0o755,
		"etc/secret":               0o600,
		"vercel/sandbox/bin":       0o750 | fs.ModeDir,
		"vercel/sandbox":           0o755 | fs.ModeDir,
	} {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode()&(fs.ModeDir|fs.ModePerm), p)
	}
	assertUntouched(t, outside)

	// Extracting again overwrites.
	_, err = Extract(context.Background(), bytes.NewReader(build(t, reg("vercel/sandbox/hello.txt", "bye"))), root, Options{})
	require.NoError(t, err)
	assert.Equal(t, "bye", read("vercel/sandbox/hello.txt"))
}

func TestExtractModesIgnoreUmaskAndSpecialBits(t *testing.T) {
	t.Parallel()
	root, _ := sandbox(t)
	data := build(t,
		ent{name: "a", typ: tar.TypeReg, mode: 0o777},
		ent{name: "b", typ: tar.TypeReg, mode: 0o4755},
		ent{name: "c", typ: tar.TypeReg, mode: 0},
		ent{name: "d/", typ: tar.TypeDir, mode: 0o1777},
		ent{name: "e/", typ: tar.TypeDir, mode: 0o500},
	)
	_, err := Extract(context.Background(), bytes.NewReader(data), root, Options{})
	require.NoError(t, err)
	for name, want := range map[string]fs.FileMode{"a": 0o777, "b": 0o755, "c": 0, "d": fs.ModeDir | 0o777, "e": fs.ModeDir | 0o700} {
		st, err := os.Stat(filepath.Join(root, name))
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode(), name)
	}
}

func TestExtractRejectsUnsafeEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		e    ent
		want error
	}{
		{"dotdot", reg("../evil", "x"), ErrUnsafePath},
		{"dotdot inside", reg("a/../../evil", "x"), ErrUnsafePath},
		{"absolute", reg("/abs", "x"), ErrUnsafePath},
		{"absolute escape", reg("/../outside.txt", "x"), ErrUnsafePath},
		{"dot file", reg(".", "x"), ErrUnsafePath},
		{"dotdot dir", ent{name: "../d/", typ: tar.TypeDir, mode: 0o755}, ErrUnsafePath},
		{"symlink out", ent{name: "etc", typ: tar.TypeSymlink, linkname: "/etc"}, ErrLink},
		{"symlink in", ent{name: "l", typ: tar.TypeSymlink, linkname: "a"}, ErrLink},
		{"hard link", ent{name: "h", typ: tar.TypeLink, linkname: "../outside.txt"}, ErrLink},
		{"char device", ent{name: "tty", typ: tar.TypeChar}, ErrUnsupported},
		{"block device", ent{name: "sda", typ: tar.TypeBlock}, ErrUnsupported},
		{"fifo", ent{name: "p", typ: tar.TypeFifo}, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root, outside := sandbox(t)
			data := build(t, reg("ok.txt", "ok"), tt.e, reg("after.txt", "after"))
			hdrs, err := Extract(context.Background(), bytes.NewReader(data), root, Options{})
			require.ErrorIs(t, err, tt.want)
			var ee *EntryError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, 1, ee.Index)
			assert.Equal(t, tt.e.name, ee.Name)
			assert.Len(t, hdrs, 1, "entries before the bad one are extracted")
			_, err = os.Stat(filepath.Join(root, "after.txt"))
			assert.ErrorIs(t, err, fs.ErrNotExist, "extraction stops at the bad entry")
			assertUntouched(t, outside)
		})
	}
}

func TestExtractSkipSpecial(t *testing.T) {
	t.Parallel()
	root, outside := sandbox(t)
	data := build(t,
		ent{name: "etc", typ: tar.TypeSymlink, linkname: "/etc"},
		ent{name: "h", typ: tar.TypeLink, linkname: "../outside.txt"},
		ent{name: "tty", typ: tar.TypeChar},
		reg("etc/x", "regular"),
	)
	hdrs, err := Extract(context.Background(), bytes.NewReader(data), root, Options{SkipSpecial: true})
	require.NoError(t, err)
	require.Len(t, hdrs, 1)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.True(t, entries[0].IsDir(), "etc is a real directory")
	assertUntouched(t, outside)

	// Unsafe names are refused even when specials are skipped.
	_, err = Extract(context.Background(), bytes.NewReader(build(t, reg("../x", ""))), root, Options{SkipSpecial: true})
	assert.ErrorIs(t, err, ErrUnsafePath)
}

func TestExtractDoesNotFollowLinksOnDisk(t *testing.T) {
	t.Parallel()
	root, outside := sandbox(t)
	// A command in the sandbox planted links that lead out of it.
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(root, "escape-dir")))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape-file")))
	require.NoError(t, os.Symlink("../outside.txt", filepath.Join(root, "escape-rel")))
	for _, name := range []string{"escape-dir/outside.txt", "escape-dir/new.txt", "escape-file", "escape-rel"} {
		_, err := Extract(context.Background(), bytes.NewReader(build(t, reg(name, "evil"))), root, Options{})
		var ee *EntryError
		assert.ErrorAs(t, err, &ee, name)
	}
	assertUntouched(t, outside)

	// Links that stay inside are followed.
	require.NoError(t, os.Mkdir(filepath.Join(root, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(root, "inside")))
	_, err := Extract(context.Background(), bytes.NewReader(build(t, reg("inside/f", "ok"))), root, Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "real", "f"))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
}

func TestExtractRefusesToReplaceNonFiles(t *testing.T) {
	t.Parallel()
	root, _ := sandbox(t)
	require.NoError(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	_, err := Extract(context.Background(), bytes.NewReader(build(t, reg("d", "x"))), root, Options{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "d", ee.Name)

	// A file where a directory is needed.
	require.NoError(t, os.WriteFile(filepath.Join(root, "f"), nil, 0o644))
	_, err = Extract(context.Background(), bytes.NewReader(build(t, reg("f/g", "x"))), root, Options{})
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "f/g", ee.Name)
}

func TestExtractLimits(t *testing.T) {
	t.Parallel()
	data := build(t, reg("a", "12345"), reg("b", "123456"), reg("c", "1"))
	tests := []struct {
		opts  Options
		index int
		want  error
	}{
		{Options{MaxEntrySize: 5}, 1, ErrTooLarge},
		{Options{MaxTotalSize: 10}, 1, ErrTooLarge},
		{Options{MaxTotalSize: 11}, 2, ErrTooLarge},
		{Options{MaxEntries: 2}, 2, ErrTooMany},
	}
	for _, tt := range tests {
		root, _ := sandbox(t)
		_, err := Extract(context.Background(), bytes.NewReader(data), root, tt.opts)
		require.ErrorIs(t, err, tt.want, "%+v", tt.opts)
		var ee *EntryError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, tt.index, ee.Index, "%+v", tt.opts)
	}
	root, _ := sandbox(t)
	_, err := Extract(context.Background(), bytes.NewReader(data), root, Options{MaxEntrySize: 6, MaxTotalSize: 12, MaxEntries: 3})
	assert.NoError(t, err)
}

func TestExtractAt(t *testing.T) {
	t.Parallel()
	root, outside := sandbox(t)
	data := build(t, reg("hello.txt", "hi"), reg("sub/x", "x"))
	_, err := ExtractAt(context.Background(), bytes.NewReader(data), root, "/vercel/sandbox", Options{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "vercel", "sandbox", "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi", string(b))

	// "/" is the root itself, and base is cleaned.
	_, err = ExtractAt(context.Background(), bytes.NewReader(data), root, "/", Options{})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "hello.txt"))
	require.NoError(t, err)
	_, err = ExtractAt(context.Background(), bytes.NewReader(data), root, "/../../a/..//x", Options{})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "x", "sub", "x"))
	require.NoError(t, err)

	// Entries may not leave base.
	_, err = ExtractAt(context.Background(), bytes.NewReader(build(t, reg("../up", "x"))), root, "/vercel/sandbox", Options{})
	assert.ErrorIs(t, err, ErrUnsafePath)
	_, err = os.Stat(filepath.Join(root, "vercel", "up"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	_, err = ExtractAt(context.Background(), bytes.NewReader(data), root, "relative", Options{})
	assert.Error(t, err)
	assertUntouched(t, outside)
}

func TestExtractBadInput(t *testing.T) {
	t.Parallel()
	root, _ := sandbox(t)
	_, err := Extract(context.Background(), strings.NewReader("not gzip"), root, Options{})
	assert.Error(t, err)

	// Truncated archive.
	data := build(t, reg("a", strings.Repeat("x", 10000)))
	_, err = Extract(context.Background(), bytes.NewReader(data[:len(data)/2]), root, Options{})
	assert.Error(t, err)

	// Corrupted gzip checksum.
	bad := bytes.Clone(data)
	bad[len(bad)-6] ^= 0xff
	_, err = Extract(context.Background(), bytes.NewReader(bad), root, Options{})
	assert.Error(t, err)
	_, err = List(bytes.NewReader(bad))
	assert.Error(t, err)

	// Missing root.
	_, err = Extract(context.Background(), bytes.NewReader(data), filepath.Join(root, "missing"), Options{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestExtractCancel(t *testing.T) {
	t.Parallel()
	root, _ := sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, bytes.NewReader(build(t, reg("a", "x"))), root, Options{})
	assert.Equal(t, context.Canceled, err)
	_, err = os.Stat(filepath.Join(root, "a"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestListAndWalk(t *testing.T) {
	t.Parallel()
	data := build(t,
		reg("a.txt", "alpha"),
		ent{name: "d/", typ: tar.TypeDir, mode: 0o755},
		ent{name: "l", typ: tar.TypeSymlink, linkname: "a.txt", mode: 0o777},
		ent{name: "s", typ: tar.TypeReg, mode: 0o4755},
	)
	hdrs, err := List(bytes.NewReader(data))
	require.NoError(t, err)
	require.Len(t, hdrs, 4)
	assert.Equal(t, Header{Name: "a.txt", Type: tar.TypeReg, Size: 5, Mode: 0o644, ModTime: time.Unix(1767000000, 0)}, hdrs[0])
	assert.Equal(t, byte(tar.TypeDir), hdrs[1].Type)
	assert.Equal(t, "a.txt", hdrs[2].Linkname)
	assert.Equal(t, fs.ModeSetuid|0o755, hdrs[3].FileMode())
	assert.Equal(t, fs.FileMode(0o644), hdrs[0].FileMode())

	var names []string
	stop := errors.New("stop")
	err = Walk(bytes.NewReader(data), func(h Header, r io.Reader) error {
		names = append(names, h.Name)
		if h.Name == "a.txt" {
			b, err := io.ReadAll(r)
			require.NoError(t, err)
			assert.Equal(t, "alpha", string(b))
		}
		if h.Name == "l" {
			return stop
		}
		return nil
	})
	assert.Equal(t, stop, err)
	assert.Equal(t, []string{"a.txt", "d/", "l"}, names)

	_, err = List(strings.NewReader(""))
	assert.Error(t, err)
}

func FuzzExtract(f *testing.F) {
	f.Add(build(f, reg("a", "x"), reg("../b", "y")))
	f.Add(build(f, ent{name: "d/", typ: tar.TypeDir, mode: 0o755}, reg("d/f", "z")))
	f.Add(build(f, ent{name: "l", typ: tar.TypeSymlink, linkname: "/etc"}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = Extract(context.Background(), bytes.NewReader(data), root, Options{MaxTotalSize: 1 << 20, MaxEntries: 100})
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Fatalf("extraction wrote outside its root: %v", entries)
		}
	})
}
