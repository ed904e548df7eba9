package files

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/bodypipe"
)

// DefaultProgressInterval is the least time between two progress reports
// unless WriteParams.ProgressInterval says otherwise.
const DefaultProgressInterval = 100 * time.Millisecond

const (
	copyBufSize = 64 << 10 // one read from a source
	outBufSize  = 64 << 10 // batches the small writes of the compressor
)

// Progress reports how far the writing of an archive has come.
type Progress struct {
	Name       string // archive name of the entry being written (or the last one)
	Entry      int    // index of that entry
	Entries    int    // number of entries
	Bytes      int64  // content bytes read from the sources so far
	TotalBytes int64  // sum of the entries' sizes
	Compressed int64  // archive bytes handed to the destination so far
	Done       bool   // the archive is complete (the last report)
}

// WriteParams configures the writing of an archive: WriteTarGz, Length,
// Validate and FileSystem.WriteFiles in package sandbox. The zero value
// asks for the defaults.
type WriteParams struct {
	// Level is the gzip compression level, as compress/gzip numbers it:
	// gzip.BestSpeed through gzip.BestCompression, gzip.HuffmanOnly or
	// gzip.DefaultCompression. Zero means the default: gzip.DefaultCompression
	// for WriteTarGz, gzip.BestSpeed for an upload. gzip.NoCompression is
	// zero too, so an archive without compression is asked for with Stored.
	// The archive is compressed with github.com/klauspost/compress, several
	// times faster than compress/gzip at the same levels.
	Level int
	// Stored writes the archive without compression (gzip.NoCompression),
	// which lets Length know its size before it is written; Level must
	// then be zero. Already-compressed content uploads fastest so.
	Stored bool
	// ModTime is the modification time recorded for every entry (rounded
	// to the second). Zero means the time the writing starts.
	ModTime time.Time
	// Progress, when set, is called with the state of the writing: at the
	// start, then at most once per ProgressInterval, and once more when the
	// archive is complete (Done set). It runs on the writing goroutine and
	// should return quickly.
	Progress func(Progress)
	// ProgressInterval is the least time between two progress reports.
	// Zero means DefaultProgressInterval; negative reports after every read
	// of a source, which is meant for tests.
	ProgressInterval time.Duration
}

type config struct {
	level    int
	progress func(Progress)
	interval time.Duration
	modTime  time.Time
}

func newConfig(p WriteParams) (config, error) {
	c := config{level: p.Level, progress: p.Progress, interval: p.ProgressInterval, modTime: p.ModTime}
	switch {
	case p.Stored && p.Level != 0:
		return c, apierr.Invalid("Level", "gzip level %d given with Stored", p.Level)
	case p.Stored:
		c.level = gzip.NoCompression
	case p.Level == 0:
		c.level = gzip.DefaultCompression
	}
	if c.interval == 0 {
		c.interval = DefaultProgressInterval
	}
	if c.level < gzip.HuffmanOnly || c.level > gzip.BestCompression {
		return c, apierr.Invalid("Level", "gzip level %d is not between %d and %d", c.level, gzip.HuffmanOnly, gzip.BestCompression)
	}
	return c, nil
}

// plan is a validated list of entries with their archive names.
type plan struct {
	entries []Entry
	names   []string
	total   int64
}

// Validate checks entries and options as WriteTarGz does before writing
// anything: the options must be valid; every entry must come from a
// constructor, have a valid sandbox path (relative paths need an absolute
// cwd), a size of zero or more and
// a valid mode (see Entry.WithMode); no two entries may have the same
// archive name, and no entry may be a parent directory of another. Problems
// are reported as an *sandbox.InputError naming the field, e.g.
// "entries[3].Path".
func Validate(cwd string, entries []Entry, p WriteParams) error {
	if _, err := newConfig(p); err != nil {
		return err
	}
	_, err := newPlan(cwd, entries)
	return err
}

func newPlan(cwd string, entries []Entry) (*plan, error) {
	p := &plan{entries: entries, names: make([]string, len(entries))}
	files := make(map[string]int, len(entries))
	dirs := make(map[string]int)
	for i, e := range entries {
		field := fmt.Sprintf("entries[%d]", i)
		if e.open == nil {
			return nil, apierr.Invalid(field, "zero Entry: use FromBytes, FromReader, FromFile, FromFS or FromDir")
		}
		if e.invalid != "" {
			return nil, apierr.Invalid(field, "%s", e.invalid)
		}
		name, f, reason := entryName(cwd, e.path)
		if reason != "" {
			if f == "cwd" {
				return nil, apierr.Invalid("cwd", "%s (needed by %s.Path)", reason, field)
			}
			return nil, apierr.Invalid(field+".Path", "%s", reason)
		}
		if e.size < 0 {
			return nil, apierr.Invalid(field+".Size", "negative size %d", e.size)
		}
		if e.size > math.MaxInt64-p.total {
			return nil, apierr.Invalid(field+".Size", "total size overflows")
		}
		if e.mode&^modeMask != 0 {
			return nil, apierr.Invalid(field+".Mode", "mode %v (%#o) has bits other than permission, setuid, setgid and sticky", e.mode, uint32(e.mode))
		}
		if j, ok := files[name]; ok {
			return nil, apierr.Invalid(field+".Path", "%s has the same destination %s as entries[%d]", quote(e.path), quote("/"+name), j)
		}
		if j, ok := dirs[name]; ok {
			return nil, apierr.Invalid(field+".Path", "destination %s is a parent directory of entries[%d]", quote("/"+name), j)
		}
		// Record the parent directories, longest first. When one is known
		// already, so are all above it, and none of them is a file.
		for k := strings.LastIndexByte(name, '/'); k > 0; k = strings.LastIndexByte(name[:k], '/') {
			d := name[:k]
			if _, ok := dirs[d]; ok {
				break
			}
			if j, ok := files[d]; ok {
				return nil, apierr.Invalid(field+".Path", "parent directory %s of %s is the file of entries[%d]", quote("/"+d), quote(e.path), j)
			}
			dirs[d] = i
		}
		files[name] = i
		p.names[i] = name
		p.total += e.size
	}
	return p, nil
}

// WriteTarGz writes the entries as a gzip-compressed tar archive into w, in
// the format of fs/write: one regular-file entry per Entry, named by
// archiveName(cwd, path), with the entry's mode, uid and gid 0, and a common
// modification time; USTAR headers, PAX records for long or non-ASCII names.
//
// Entries are validated first (see Validate); nothing is written if one is
// invalid. Contents are then read one entry at a time through a fixed
// buffer, so memory use does not depend on their sizes. A source that yields
// a different number of bytes than its size, or fails to open or read, ends
// the writing with an *EntryError; the archive is then incomplete.
//
// WriteTarGz checks ctx between reads and returns ctx.Err() once it is done.
// It cannot interrupt a Write to w or a Read of a source that blocks.
func WriteTarGz(ctx context.Context, w io.Writer, cwd string, entries []Entry, p WriteParams) error {
	if w == nil {
		return apierr.Invalid("w", "nil writer")
	}
	cfg, err := newConfig(p)
	if err != nil {
		return err
	}
	pl, err := newPlan(cwd, entries)
	if err != nil {
		return err
	}
	return pl.write(ctx, w, cfg)
}

// mtime returns the modification time of the entries.
func (c config) mtime() time.Time {
	t := c.modTime
	if t.IsZero() {
		t = time.Now()
	}
	return t.Truncate(time.Second)
}

// header returns the tar header of entry i.
func (p *plan) header(i int, mtime time.Time) *tar.Header {
	return &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     p.names[i],
		Mode:     tarMode(p.entries[i].mode),
		Size:     p.entries[i].size,
		ModTime:  mtime,
	}
}

// Length returns the exact length in bytes of the archive that WriteTarGz
// writes for these entries and options, without reading any content. It is
// known before writing only without compression (WriteParams.Stored); for a compressed archive ok is false. This lets an
// upload declare its Content-Length and still stream the archive. Invalid
// entries or options are reported as by Validate.
func Length(cwd string, entries []Entry, p WriteParams) (n int64, ok bool, err error) {
	cfg, err := newConfig(p)
	if err != nil {
		return 0, false, err
	}
	pl, err := newPlan(cwd, entries)
	if err != nil || cfg.level != gzip.NoCompression {
		return 0, false, err
	}
	n, err = pl.storedLength(cfg)
	return n, err == nil, err
}

// storedLength returns the length of the archive written without
// compression.
func (p *plan) storedLength(cfg config) (int64, error) {
	mtime := cfg.mtime()
	var cw countWriter
	cw.w = io.Discard
	tarSize := int64(2 * blockSize) // end-of-archive marker
	for i := range p.entries {
		// A tar.Writer writes a header (with its PAX records, if any) at
		// once; the content that should follow is not needed to count it.
		before := cw.n
		if err := tar.NewWriter(&cw).WriteHeader(p.header(i, mtime)); err != nil {
			return 0, fmt.Errorf("files: %w", err)
		}
		size := p.entries[i].size
		if tarSize > math.MaxInt64/4 || size > math.MaxInt64/4 {
			return 0, apierr.Invalid("entries", "archive size overflows")
		}
		tarSize += cw.n - before + (size+blockSize-1)/blockSize*blockSize
	}
	// Without compression, deflate emits stored blocks of at most
	// maxStoredBlock bytes with a 5-byte header each, then an empty final
	// block in the fixed Huffman code (2 bytes); gzip adds a 10-byte header
	// and an 8-byte trailer.
	blocks := (tarSize + maxStoredBlock - 1) / maxStoredBlock
	return gzipHeader + tarSize + storedHeader*blocks + finalBlock + gzipTrailer, nil
}

const (
	blockSize      = 512   // tar block
	maxStoredBlock = 65535 // largest stored deflate block
	storedHeader   = 5     // stored block header: 3 bits padded to a byte, LEN, NLEN
	finalBlock     = 2     // empty final block: 3 header bits and a 7-bit end code, padded
	gzipHeader     = 10
	gzipTrailer    = 8
)

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// writeError marks an error of the destination, so that it is not taken for
// an error of a source.
type writeError struct{ err error }

func (e writeError) Error() string { return e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

func (p *plan) write(ctx context.Context, w io.Writer, cfg config) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// fail reports an error of the destination, or ctx's error when ctx
	// ended (which is often why the destination failed).
	fail := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("files: write archive: %w", err)
	}
	mtime := cfg.mtime()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, outBufSize)
	gz, err := gzip.NewWriterLevel(bw, cfg.level)
	if err != nil {
		return apierr.Invalid("Level", "%v", err)
	}
	tw := tar.NewWriter(gz)
	pr := progress{fn: cfg.progress, interval: cfg.interval, cw: cw}
	pr.p.Entries = len(p.entries)
	pr.p.TotalBytes = p.total
	buf := make([]byte, copyBufSize)

	for i, e := range p.entries {
		pr.p.Entry, pr.p.Name = i, p.names[i]
		pr.report(false)
		if err := tw.WriteHeader(p.header(i, mtime)); err != nil {
			return fail(err)
		}
		if err := copyEntry(ctx, tw, e, buf, &pr); err != nil {
			var we writeError
			if errors.As(err, &we) {
				return fail(we.err)
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return &EntryError{Index: i, Name: p.names[i], Err: err}
		}
	}
	if err := tw.Close(); err != nil {
		return fail(err)
	}
	if err := gz.Close(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	pr.report(true)
	return nil
}

// copyEntry copies exactly e.size bytes of e's content into tw.
func copyEntry(ctx context.Context, tw io.Writer, e Entry, buf []byte, pr *progress) (err error) {
	src, err := e.open()
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer func() {
		if cerr := src.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()
	remaining := e.size
	eof := false
	for remaining > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if eof {
			return fmt.Errorf("%w: declared %d bytes, got %d", ErrSizeMismatch, e.size, e.size-remaining)
		}
		chunk := buf
		if int64(len(chunk)) > remaining {
			chunk = chunk[:remaining]
		}
		n, rerr := src.Read(chunk)
		if n > 0 {
			if _, werr := tw.Write(chunk[:n]); werr != nil {
				return writeError{werr}
			}
			remaining -= int64(n)
			pr.add(int64(n))
		}
		switch {
		case rerr == io.EOF:
			eof = true
		case rerr != nil:
			return fmt.Errorf("read: %w", rerr)
		}
	}
	if eof {
		return nil
	}
	// The declared size is reached: the source must be at its end.
	var probe [1]byte
	for range 100 {
		n, rerr := src.Read(probe[:])
		if n > 0 {
			return fmt.Errorf("%w: declared %d bytes, the source has more", ErrSizeMismatch, e.size)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("read: %w", rerr)
		}
	}
	return fmt.Errorf("read: %w", io.ErrNoProgress)
}

// progress rate-limits progress reports.
type progress struct {
	fn       func(Progress)
	interval time.Duration
	last     time.Time
	cw       *countWriter
	p        Progress
}

func (pr *progress) add(n int64) {
	pr.p.Bytes += n
	pr.report(false)
}

func (pr *progress) report(done bool) {
	if pr.fn == nil {
		return
	}
	now := time.Now()
	if !done && !pr.last.IsZero() && now.Sub(pr.last) < pr.interval {
		return
	}
	pr.last = now
	pr.p.Compressed = pr.cw.n
	pr.p.Done = done
	pr.fn(pr.p)
}

// newTarGzReader returns the archive that WriteTarGz would write, as a
// reader that produces it while it is read (see bodypipe.New). An archive
// of entries that are not replayable can be read only once.
func newTarGzReader(ctx context.Context, cwd string, entries []Entry, p WriteParams) (io.ReadCloser, error) {
	cfg, err := newConfig(p)
	if err != nil {
		return nil, err
	}
	pl, err := newPlan(cwd, entries)
	if err != nil {
		return nil, err
	}
	return bodypipe.New(ctx, func(ctx context.Context, w io.Writer) error { return pl.write(ctx, w, cfg) }), nil
}
