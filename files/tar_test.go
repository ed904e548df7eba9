package files

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/tarx"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	local := filepath.Join(t.TempDir(), "script.sh")
	require.NoError(t, os.WriteFile(local, []byte("#!/bin/sh\necho hi\n"), 0o644))
	require.NoError(t, os.Chmod(local, 0o750))
	fromFile, err := FromFile("bin/run.sh", local)
	require.NoError(t, err)
	big := randomBytes(1, 300<<10) // spans several copy buffers

	entries := []Entry{
		FromBytes("hello.txt", []byte("hello, sandbox\n")),
		FromBytes("/etc/app.conf", []byte("debug = true\n")).WithMode(0o600),
		FromReader("data/big.bin", bytes.NewReader(big), int64(len(big))),
		FromBytes("empty", nil),
		fromFile,
		FromBytes("../outside-cwd.txt", []byte("up one")),
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	data := archive(t, entries, WriteParams{ModTime: mtime})

	hdrs, err := tarx.List(bytes.NewReader(data))
	require.NoError(t, err)
	type hdr struct {
		Name string
		Type byte
		Size int64
		Mode int64
	}
	var got []hdr
	for _, h := range hdrs {
		got = append(got, hdr{h.Name, h.Type, h.Size, h.Mode})
		assert.Equal(t, 0, h.Uid)
		assert.Equal(t, 0, h.Gid)
		assert.True(t, h.ModTime.Equal(mtime.Truncate(time.Second)), "mtime %v", h.ModTime)
	}
	want := []hdr{
		{"vercel/sandbox/hello.txt", tar.TypeReg, 15, 0o644},
		{"etc/app.conf", tar.TypeReg, 13, 0o600},
		{"vercel/sandbox/data/big.bin", tar.TypeReg, int64(len(big)), 0o644},
		{"vercel/sandbox/empty", tar.TypeReg, 0, 0o644},
		{"vercel/sandbox/bin/run.sh", tar.TypeReg, 18, 0o750},
		{"vercel/outside-cwd.txt", tar.TypeReg, 6, 0o644},
	}
	assert.Empty(t, cmp.Diff(want, got))

	root := extract(t, data)
	assert.Equal(t, "hello, sandbox\n", readFile(t, root, "vercel/sandbox/hello.txt"))
	assert.Equal(t, "debug = true\n", readFile(t, root, "etc/app.conf"))
	assert.Equal(t, string(big), readFile(t, root, "vercel/sandbox/data/big.bin"))
	assert.Equal(t, "", readFile(t, root, "vercel/sandbox/empty"))
	assert.Equal(t, "#!/bin/sh\necho hi\n", readFile(t, root, "vercel/sandbox/bin/run.sh"))
	assert.Equal(t, "up one", readFile(t, root, "vercel/outside-cwd.txt"))
	st, err := os.Stat(filepath.Join(root, "etc", "app.conf"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
}

func TestNoDirectoryEntries(t *testing.T) {
	t.Parallel()
	data := archive(t, []Entry{FromBytes("a/b/c/d.txt", []byte("x")), FromBytes("a/e.txt", []byte("y"))})
	hdrs, err := tarx.List(bytes.NewReader(data))
	require.NoError(t, err)
	require.Len(t, hdrs, 2)
	for _, h := range hdrs {
		assert.Equal(t, byte(tar.TypeReg), h.Type, h.Name)
	}
}

func TestLongAndNonASCIINames(t *testing.T) {
	t.Parallel()
	long150 := strings.Repeat("d23456789/", 14) + "file.txt"             // > 100: USTAR prefix
	long300 := strings.Repeat("e23456789/", 29) + "tail.txt"             // > 255: PAX path
	longSeg := strings.Repeat("x", 200) + "/" + strings.Repeat("y", 200) // no USTAR split possible
	names := []string{
		long150, long300, longSeg,
		"données/日本語/файл.txt",
		"emoji 🎉/naïve café.md",
		"ascii/but spaces & $ymbols!.txt",
	}
	var entries []Entry
	for i, n := range names {
		entries = append(entries, FromBytes(n, []byte(fmt.Sprintf("content %d", i))))
	}
	data := archive(t, entries)
	got := contents(t, data)
	require.Len(t, got, len(names))
	root := extract(t, data)
	for i, n := range names {
		name := "vercel/sandbox/" + n
		assert.Equal(t, fmt.Sprintf("content %d", i), got[name], name)
		assert.Equal(t, fmt.Sprintf("content %d", i), readFile(t, root, name))
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	modes := []fs.FileMode{0o644, 0o600, 0o755, 0o777, 0o400, 0, 0o4755, fs.ModeSetgid | 0o750, fs.ModeSticky | 0o777}
	wantHdr := []int64{0o644, 0o600, 0o755, 0o777, 0o400, 0, 0o4755, 0o2750, 0o1777}
	var entries []Entry
	for i, m := range modes {
		entries = append(entries, FromBytes(fmt.Sprintf("f%d", i), []byte("x")).WithMode(m))
	}
	data := archive(t, entries)
	hdrs, err := tarx.List(bytes.NewReader(data))
	require.NoError(t, err)
	require.Len(t, hdrs, len(modes))
	for i, h := range hdrs {
		assert.Equal(t, wantHdr[i], h.Mode, "%s: %#o", h.Name, h.Mode)
	}
	root := extract(t, data)
	for i, m := range modes {
		st, err := os.Stat(filepath.Join(root, "vercel", "sandbox", fmt.Sprintf("f%d", i)))
		require.NoError(t, err)
		assert.Equal(t, m.Perm(), st.Mode().Perm(), "f%d", i)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := FromBytes("ok", []byte("x"))
	tests := []struct {
		name    string
		cwd     string
		entries []Entry
		field   string
	}{
		{"zero entry", cwd, []Entry{ok, {}}, "entries[1]"},
		{"empty path", cwd, []Entry{FromBytes("", []byte("x"))}, "entries[0].Path"},
		{"NUL", cwd, []Entry{ok, ok.withPath("a\x00b")}, "entries[1].Path"},
		{"root", cwd, []Entry{FromBytes("/", []byte("x"))}, "entries[0].Path"},
		{"negative size", cwd, []Entry{FromReader("r", strings.NewReader(""), -1)}, "entries[0].Size"},
		{"mode dir", cwd, []Entry{ok.WithMode(fs.ModeDir | 0o755)}, "entries[0].Mode"},
		{"mode symlink", cwd, []Entry{ok.WithMode(fs.ModeSymlink)}, "entries[0].Mode"},
		{"duplicate", cwd, []Entry{ok, FromBytes("other", []byte("")), FromBytes("./ok", []byte("y"))}, "entries[2].Path"},
		{"duplicate absolute", cwd, []Entry{ok, FromBytes("/vercel/sandbox/ok", []byte("y"))}, "entries[1].Path"},
		{"file then child", cwd, []Entry{FromBytes("a", []byte("")), FromBytes("a/b", []byte(""))}, "entries[1].Path"},
		{"child then file", cwd, []Entry{FromBytes("a/b/c", []byte("")), FromBytes("a/b", []byte(""))}, "entries[1].Path"},
		{"file is cwd", cwd, []Entry{ok, FromBytes("/vercel", []byte(""))}, "entries[1].Path"},
		{"relative without cwd", "", []Entry{ok}, "cwd"},
		{"relative cwd", "vercel", []Entry{ok}, "cwd"},
		{"overflow", cwd, []Entry{FromReader("a", strings.NewReader(""), 1<<62), FromReader("b", strings.NewReader(""), 1<<62)}, "entries[1].Size"},
		{"nil reader", cwd, []Entry{ok, FromReader("r", nil, 0)}, "entries[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.cwd, tt.entries, WriteParams{})
			require.Error(t, err)
			var ie *apierr.InputError
			require.True(t, errors.As(err, &ie), "%T %v", err, err)
			assert.Equal(t, tt.field, ie.Field, err.Error())
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)

			// The writers refuse the same entries and write nothing.
			var buf bytes.Buffer
			assert.ErrorIs(t, WriteTarGz(context.Background(), &buf, tt.cwd, tt.entries, WriteParams{}), apierr.ErrInvalidInput)
			assert.Zero(t, buf.Len())
			rc, err := newTarGzReader(context.Background(), tt.cwd, tt.entries, WriteParams{})
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)
			assert.Nil(t, rc)
		})
	}

	// Valid lists, including absolute paths without a cwd and siblings that
	// share a prefix.
	assert.NoError(t, Validate("", []Entry{FromBytes("/a", []byte("")), FromBytes("/b/c", []byte(""))}, WriteParams{}))
	assert.NoError(t, Validate(cwd, []Entry{FromBytes("a", []byte("")), FromBytes("ab/c", []byte("")), FromBytes("a.b/c", []byte("")), FromBytes("ab/d", []byte(""))}, WriteParams{}))
	assert.NoError(t, Validate(cwd, nil, WriteParams{}))

	// Parameters: Stored excludes a level; zero Level is the default.
	assert.ErrorIs(t, Validate(cwd, nil, WriteParams{Stored: true, Level: gzip.BestSpeed}), apierr.ErrInvalidInput)
	assert.ErrorIs(t, Validate(cwd, nil, WriteParams{Level: 10}), apierr.ErrInvalidInput)
	assert.NoError(t, Validate(cwd, nil, WriteParams{Stored: true}))
}

// withPath is a test helper that changes an entry's destination.
func (e Entry) withPath(p string) Entry {
	e.path = p
	return e
}

func TestInvalidLevel(t *testing.T) {
	t.Parallel()
	for _, level := range []int{-3, 10, 100} {
		err := WriteTarGz(context.Background(), io.Discard, cwd, nil, atLevel(level))
		var ie *apierr.InputError
		require.True(t, errors.As(err, &ie), "level %d: %v", level, err)
		assert.Equal(t, "Level", ie.Field)
	}
	for _, level := range []int{gzip.HuffmanOnly, gzip.DefaultCompression, gzip.NoCompression, gzip.BestSpeed, gzip.BestCompression} {
		data := archive(t, []Entry{FromBytes("a", []byte(strings.Repeat("abc", 1000)))}, atLevel(level))
		assert.Equal(t, map[string]string{"vercel/sandbox/a": strings.Repeat("abc", 1000)}, contents(t, data), "level %d", level)
	}
}

func TestEmptyArchive(t *testing.T) {
	t.Parallel()
	data := archive(t, nil)
	hdrs, err := tarx.List(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Empty(t, hdrs)
}

func TestFromReaderSizeMismatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    io.Reader
		size int64
	}{
		{"short", strings.NewReader("12345"), 6},
		{"short big", newPatternReader(200 << 10), 300 << 10},
		{"empty", strings.NewReader(""), 1},
		{"long", strings.NewReader("1234567"), 6},
		{"long big", newPatternReader(300<<10 + 1), 300 << 10},
		{"long by one byte reads", iotest.OneByteReader(strings.NewReader("abc")), 2},
		{"long after zero", strings.NewReader("x"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entries := []Entry{FromBytes("first", []byte("ok")), FromReader("r.bin", tt.r, tt.size)}
			err := WriteTarGz(context.Background(), io.Discard, cwd, entries, WriteParams{})
			require.ErrorIs(t, err, ErrSizeMismatch)
			var ee *EntryError
			require.True(t, errors.As(err, &ee))
			assert.Equal(t, 1, ee.Index)
			assert.Equal(t, "vercel/sandbox/r.bin", ee.Name)
		})
	}

	// Exact sizes pass, whatever the read pattern.
	for _, r := range []io.Reader{
		iotest.OneByteReader(strings.NewReader("abc")),
		iotest.DataErrReader(strings.NewReader("abc")),
		iotest.HalfReader(strings.NewReader("abc")),
	} {
		data := archive(t, []Entry{FromReader("r", r, 3)})
		assert.Equal(t, map[string]string{"vercel/sandbox/r": "abc"}, contents(t, data))
	}
}

func TestSourceErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	err := WriteTarGz(context.Background(), io.Discard, cwd, []Entry{FromReader("r", errReader{boom}, 10)}, WriteParams{})
	assert.ErrorIs(t, err, boom)
	var ee *EntryError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, "vercel/sandbox/r", ee.Name)
}

func TestFromReaderIsOneShot(t *testing.T) {
	t.Parallel()
	e := FromReader("r", strings.NewReader("abc"), 3)
	entries := []Entry{FromBytes("s", []byte("x")), e}
	assert.False(t, e.Replayable())
	assert.False(t, replayable(entries))
	assert.True(t, replayable(entries[:1]))
	_ = archive(t, entries)
	err := WriteTarGz(context.Background(), io.Discard, cwd, entries, WriteParams{})
	assert.ErrorIs(t, err, ErrConsumed)
}

func TestReplayableArchivesAreIdentical(t *testing.T) {
	t.Parallel()
	local := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(local, []byte("file"), 0o644))
	f, err := FromFile("f", local)
	require.NoError(t, err)
	entries := []Entry{FromBytes("s", []byte("x")), FromBytes("b", []byte("y")), f}
	require.True(t, replayable(entries))
	opt := WriteParams{ModTime: time.Unix(1767000000, 0)}
	first := archive(t, entries, opt)
	assert.Equal(t, first, archive(t, entries, opt))

	rc, err := newTarGzReader(context.Background(), cwd, entries, opt)
	require.NoError(t, err)
	viaReader, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	assert.Equal(t, first, viaReader)
}

func TestFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	local := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(local, []byte("first"), 0o600))

	e, err := FromFile("dst.txt", local)
	require.NoError(t, err)
	assert.Equal(t, "dst.txt", e.Path())
	assert.Equal(t, int64(5), e.Size())
	assert.Equal(t, fs.FileMode(0o600), e.Mode())
	assert.Equal(t, fs.FileMode(0o640), e.WithMode(0o640).Mode())
	assert.Equal(t, fs.FileMode(0o600), e.Mode(), "WithMode returns a copy")

	// The content is read when written, not when the entry is made.
	require.NoError(t, os.WriteFile(local, []byte("later"), 0o600))
	assert.Equal(t, map[string]string{"vercel/sandbox/dst.txt": "later"}, contents(t, archive(t, []Entry{e})))

	// A changed size is an error.
	require.NoError(t, os.WriteFile(local, []byte("longer now"), 0o600))
	err = WriteTarGz(context.Background(), io.Discard, cwd, []Entry{e}, WriteParams{})
	assert.ErrorIs(t, err, ErrSizeMismatch)

	// A vanished file is an error naming the entry.
	require.NoError(t, os.Remove(local))
	err = WriteTarGz(context.Background(), io.Discard, cwd, []Entry{e}, WriteParams{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// Directories and missing files are refused up front.
	_, err = FromFile("x", dir)
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = FromFile("x", filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = FromFile("x", "")
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
}

func TestFromFileReplacedByDirectory(t *testing.T) {
	t.Parallel()
	local := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(local, nil, 0o644))
	e, err := FromFile("f", local)
	require.NoError(t, err)
	require.NoError(t, os.Remove(local))
	require.NoError(t, os.Mkdir(local, 0o755))
	err = WriteTarGz(context.Background(), io.Discard, cwd, []Entry{e}, WriteParams{})
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, err.Error(), "not a regular file")
}

func TestAccessorsAndTotalSize(t *testing.T) {
	t.Parallel()
	entries := []Entry{
		FromBytes("a", []byte("abc")),
		FromBytes("/b", make([]byte, 10)),
		FromReader("c", strings.NewReader(""), 7),
		FromReader("d", strings.NewReader(""), -5),
	}
	assert.Equal(t, int64(20), totalSize(entries))
	assert.Equal(t, "/b", entries[1].Path())
	assert.Equal(t, DefaultMode, entries[2].Mode())
	assert.Equal(t, int64(7), entries[2].Size())
	assert.Zero(t, totalSize(nil))
}

func TestProgress(t *testing.T) {
	t.Parallel()
	entries := []Entry{
		FromBytes("a", randomBytes(2, 200<<10)),
		FromBytes("b", []byte("")),
		FromBytes("c", randomBytes(3, 100<<10)),
	}
	var reports []Progress
	data := archive(t, entries, WriteParams{Progress: func(p Progress) { reports = append(reports, p) }, ProgressInterval: -1})
	require.NotEmpty(t, reports)
	last := reports[len(reports)-1]
	assert.True(t, last.Done)
	assert.Equal(t, int64(300<<10), last.Bytes)
	assert.Equal(t, int64(300<<10), last.TotalBytes)
	assert.Equal(t, int64(len(data)), last.Compressed)
	assert.Equal(t, 3, last.Entries)
	assert.Equal(t, 2, last.Entry)
	assert.Equal(t, "vercel/sandbox/c", last.Name)
	assert.Equal(t, Progress{Name: "vercel/sandbox/a", Entries: 3, TotalBytes: 300 << 10}, reports[0])
	seen := map[string]bool{}
	for i, p := range reports {
		seen[p.Name] = true
		if i > 0 {
			assert.GreaterOrEqual(t, p.Bytes, reports[i-1].Bytes)
			assert.GreaterOrEqual(t, p.Compressed, reports[i-1].Compressed)
			assert.GreaterOrEqual(t, p.Entry, reports[i-1].Entry)
		}
		assert.Equal(t, i == len(reports)-1, p.Done)
	}
	assert.Len(t, seen, 3)
}

func TestProgressIsRateLimited(t *testing.T) {
	t.Parallel()
	entries := make([]Entry, 2000)
	for i := range entries {
		entries[i] = FromBytes(fmt.Sprintf("f/%d", i), []byte("tiny"))
	}
	calls := 0
	start := time.Now()
	_ = archive(t, entries, WriteParams{Progress: func(Progress) { calls++ }, ProgressInterval: time.Hour})
	assert.Equal(t, 2, calls, "the first report and the final one")

	calls = 0
	_ = archive(t, entries, WriteParams{Progress: func(Progress) { calls++ }})
	maxCalls := int(time.Since(start)/DefaultProgressInterval) + 3
	assert.LessOrEqual(t, calls, maxCalls)
}

func TestWriterErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("disk full")
	for _, limit := range []int{0, 10, 70 << 10} {
		w := &failWriter{limit: limit, err: boom}
		err := WriteTarGz(context.Background(), w, cwd, []Entry{FromBytes("a", randomBytes(4, 200<<10))}, WriteParams{})
		assert.ErrorIs(t, err, boom, "limit %d", limit)
		var ee *EntryError
		assert.False(t, errors.As(err, &ee), "a destination error is not an entry error")
	}
}

// cancelReader cancels a context once it has yielded after bytes, and keeps
// yielding.
type cancelReader struct {
	r      io.Reader
	after  int64
	cancel context.CancelFunc
}

func (c *cancelReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.after -= int64(n)
	if c.after <= 0 {
		c.cancel()
	}
	return n, err
}

func TestWriteTarGzCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const size = 1 << 30
	src := &cancelReader{r: newPatternReader(size), after: 1 << 20, cancel: cancel}
	var out countWriter
	out.w = io.Discard
	start := time.Now()
	err := WriteTarGz(ctx, &out, cwd, []Entry{FromReader("big", src, size)}, atLevel(gzip.NoCompression))
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, context.Canceled, err, "ctx.Err() itself")
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Less(t, out.n, int64(8<<20), "stopped soon after the cancellation")

	// A context that is already done writes nothing.
	var buf bytes.Buffer
	err = WriteTarGz(ctx, &buf, cwd, []Entry{FromBytes("a", []byte("b"))}, WriteParams{})
	assert.Equal(t, context.Canceled, err)
	assert.Zero(t, buf.Len())
}

func TestReaderCancelWhileReading(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err := newTarGzReader(ctx, cwd, []Entry{FromReader("big", newPatternReader(1<<30), 1<<30)}, atLevel(gzip.BestSpeed))
	require.NoError(t, err)
	buf := make([]byte, 32<<10)
	for range 10 {
		_, err := io.ReadFull(rc, buf)
		require.NoError(t, err)
	}
	cancel()
	start := time.Now()
	var rerr error
	for rerr == nil {
		_, rerr = rc.Read(buf)
	}
	assert.Equal(t, context.Canceled, rerr)
	require.NoError(t, rc.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestReaderCancelWhileNotReading(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := newTarGzReader(ctx, cwd, []Entry{FromReader("big", newPatternReader(1<<30), 1<<30)}, WriteParams{})
	require.NoError(t, err)
	_, err = rc.Read(make([]byte, 100)) // starts the writer, which then blocks in the pipe
	require.NoError(t, err)
	cancel()
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = rc.Close()
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the context was cancelled")
	}
	_, err = rc.Read(make([]byte, 10))
	assert.Error(t, err)
}

func TestReaderCloseMidStream(t *testing.T) {
	t.Parallel()
	rc, err := newTarGzReader(context.Background(), cwd, []Entry{FromReader("big", newPatternReader(1<<30), 1<<30)}, WriteParams{})
	require.NoError(t, err)
	_, err = io.ReadFull(rc, make([]byte, 256<<10))
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, rc.Close())
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = rc.Read(make([]byte, 10))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
	require.NoError(t, rc.Close(), "Close is idempotent")
}

func TestReaderCloseWithoutRead(t *testing.T) {
	t.Parallel()
	e := FromReader("r", strings.NewReader("abc"), 3)
	rc, err := newTarGzReader(context.Background(), cwd, []Entry{e}, WriteParams{})
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	_, err = rc.Read(make([]byte, 10))
	assert.ErrorIs(t, err, io.ErrClosedPipe)
	// The source was never touched.
	assert.NoError(t, WriteTarGz(context.Background(), io.Discard, cwd, []Entry{e}, WriteParams{}))
}

func TestReaderCancelledBeforeRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := newTarGzReader(ctx, cwd, []Entry{FromBytes("a", []byte("b"))}, WriteParams{})
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(rc)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, rc.Close())
}

func TestReaderReportsEntryErrors(t *testing.T) {
	t.Parallel()
	rc, err := newTarGzReader(context.Background(), cwd, []Entry{FromReader("r", strings.NewReader("ab"), 3)}, WriteParams{})
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	assert.ErrorIs(t, err, ErrSizeMismatch)
	require.NoError(t, rc.Close())
}

func TestReaderConcurrentClose(t *testing.T) {
	t.Parallel()
	for range 20 {
		rc, err := newTarGzReader(context.Background(), cwd, []Entry{FromReader("big", newPatternReader(64<<20), 64<<20)}, WriteParams{})
		require.NoError(t, err)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(io.Discard, rc)
		}()
		go func() {
			defer wg.Done()
			_ = rc.Close()
		}()
		wg.Wait()
		require.NoError(t, rc.Close())
	}
}

// TestLength checks the predicted archive length against the
// bytes a real write at gzip.NoCompression produces, for archives that end
// anywhere in a stored block, exactly on its end, and past it.
func TestLength(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("long-name/", 30) + "日本.txt"
	// One entry of n bytes makes a tar stream of 512+n rounded up to 512,
	// plus the 1024-byte end marker.
	const overhead = 3 * blockSize
	sets := map[string][]Entry{
		"empty":  nil,
		"one":    {FromBytes("a", []byte("x"))},
		"blocks": {FromBytes("a", make([]byte, 512)), FromBytes("b", make([]byte, 513)), FromBytes("c", nil)},
		"pax":    {FromBytes(long, []byte("long")), FromBytes("/"+long+"2", []byte(""))},
		"big": {
			FromReader("r1", iotest.OneByteReader(newPatternReader(70000)), 70000),
			FromReader("r2", iotest.HalfReader(newPatternReader(200000)), 200000),
			FromReader("r3", newPatternReader(maxStoredBlock*3-1536-3*512), maxStoredBlock*3-1536-3*512),
		},
		// The tar stream fills its last stored block exactly: no partial
		// block is left for the close.
		"exact": {FromReader("f", newPatternReader(blockSize*maxStoredBlock-overhead), blockSize*maxStoredBlock-overhead)},
	}
	for _, n := range []int64{maxStoredBlock - overhead, maxStoredBlock - overhead + 1, 2*maxStoredBlock - overhead, 2*maxStoredBlock - overhead + 512} {
		sets[fmt.Sprintf("content-%d", n)] = []Entry{FromReader("f", newPatternReader(n), n)}
	}
	for name, entries := range sets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, known, err := Length(cwd, entries, atLevel(gzip.NoCompression))
			require.NoError(t, err)
			require.True(t, known)
			var got countWriter
			got.w = io.Discard
			require.NoError(t, WriteTarGz(context.Background(), &got, cwd, entries, WriteParams{Stored: true, ModTime: time.Unix(1, 0)}))
			assert.Equal(t, want, got.n, "predicted length against the bytes written")
		})
	}
	_, _, err := Length(cwd, []Entry{{}}, WriteParams{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, known, err := Length(cwd, []Entry{FromBytes("f", []byte("x"))}, atLevel(gzip.BestSpeed))
	require.NoError(t, err)
	assert.False(t, known, "a compressed length is known only once written")
}
