// Package tarx reads the gzip-compressed tar archives of fs/write: it lists
// them and extracts them safely into a host directory. The local server
// (sandbox/local) uses it to serve uploads; tests use it to inspect
// archives.
//
// Extraction is confined: entry names are cleaned and must stay inside the
// extraction directory, and all file system access goes through an os.Root,
// so neither ".." nor a symbolic link already present on disk can lead
// outside it. Symbolic and hard link entries are refused (or skipped with
// Options.SkipSpecial), as are device, FIFO and other special entries: the
// fs/write format carries regular files only.
package tarx

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Header describes one archive entry.
type Header struct {
	Name     string // entry name as stored (PAX path and USTAR prefix resolved)
	Type     byte   // tar type flag, e.g. tar.TypeReg
	Size     int64  // content length
	Mode     int64  // permission and mode bits of the header, e.g. 0o644
	ModTime  time.Time
	Uid, Gid int
	Linkname string // target of link entries
}

// FileMode returns the header's permission bits with the setuid, setgid and
// sticky flags as an fs.FileMode (type bits not included).
func (h Header) FileMode() fs.FileMode {
	m := fs.FileMode(h.Mode & 0o777)
	if h.Mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if h.Mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if h.Mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

func header(h *tar.Header) Header {
	return Header{
		Name: h.Name, Type: h.Typeflag, Size: h.Size, Mode: h.Mode,
		ModTime: h.ModTime, Uid: h.Uid, Gid: h.Gid, Linkname: h.Linkname,
	}
}

// Sentinel causes of *EntryError, matched with errors.Is.
var (
	ErrUnsafePath  = errors.New("entry name is absolute or escapes the extraction directory")
	ErrLink        = errors.New("link entries are not allowed")
	ErrUnsupported = errors.New("unsupported entry type")
	ErrTooLarge    = errors.New("size limit exceeded")
	ErrTooMany     = errors.New("too many entries")
)

// EntryError reports an entry that could not be listed or extracted.
type EntryError struct {
	Index int    // position of the entry in the archive, from 0
	Name  string // entry name as stored; empty when the header was unreadable
	Err   error
}

// Error implements error.
func (e *EntryError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("tarx: entry %d: %v", e.Index, e.Err)
	}
	return fmt.Sprintf("tarx: entry %d %q: %v", e.Index, e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *EntryError) Unwrap() error { return e.Err }

// Walk calls fn for each entry of the gzip-compressed tar archive read from
// r, with the entry's content (valid until fn returns; fn need not read it).
// It stops at the first error, which it returns; an error returned by fn is
// returned as is.
func Walk(r io.Reader, fn func(h Header, content io.Reader) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("tarx: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &EntryError{Index: i, Err: err}
		}
		if err := fn(header(h), tr); err != nil {
			return err
		}
	}
	return drain(gz)
}

// List returns the headers of every entry of the gzip-compressed tar
// archive read from r.
func List(r io.Reader) ([]Header, error) {
	var out []Header
	err := Walk(r, func(h Header, _ io.Reader) error {
		out = append(out, h)
		return nil
	})
	return out, err
}

// maxTrailer bounds the bytes read after the end of the tar stream, to check
// the gzip checksum without reading an unbounded tail.
const maxTrailer = 1 << 20

// drain reads what follows the tar end marker, so that gzip verifies its
// checksum and length.
func drain(gz io.Reader) error {
	n, err := io.CopyN(io.Discard, gz, maxTrailer+1)
	switch {
	case err == io.EOF:
		return nil
	case err != nil:
		return fmt.Errorf("tarx: %w", err)
	case n > maxTrailer:
		return fmt.Errorf("tarx: more than %d bytes after the end of the archive", maxTrailer)
	}
	return nil
}

// Options bounds and adjusts an extraction. The zero value imposes no limit.
type Options struct {
	// MaxEntrySize bounds the size of each file; 0 means no limit.
	MaxEntrySize int64
	// MaxTotalSize bounds the sum of the file sizes; 0 means no limit.
	MaxTotalSize int64
	// MaxEntries bounds the number of entries; 0 means no limit.
	MaxEntries int
	// DirMode is the mode of parent directories created for files
	// (default 0o755, before the process umask).
	DirMode fs.FileMode
	// SkipSpecial skips link, device, FIFO and other special entries
	// instead of failing on them.
	SkipSpecial bool
	// Target maps each entry name to the host-style path, relative to the
	// extraction directory, where the entry goes, or refuses the entry
	// with an error. By default a name is cleaned and must stay inside
	// the directory. What Target returns must stay inside it too.
	Target func(name string) (string, error)
}

// Extract extracts the gzip-compressed tar archive read from r into the
// host directory root, which must exist. Entry names are relative to root.
//
// Regular files are created or truncated, with missing parent directories,
// and get the header's permission bits exactly (umask not applied); the
// setuid, setgid and sticky bits and the modification time are not applied.
// Directory entries create directories (their mode is applied with the
// owner's rwx bits added, so that extraction can go on). The name "." is
// accepted for a directory entry and changes nothing.
//
// Any entry whose cleaned name is absolute or leaves root, any link entry,
// any special entry, an entry over a limit of opts, or a failure to write
// ends the extraction with an *EntryError naming the entry; what was
// extracted before stays. ctx is checked between reads.
//
// Extract returns the headers of the entries it extracted, in order.
func Extract(ctx context.Context, r io.Reader, root string, opts Options) ([]Header, error) {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("tarx: %w", err)
	}
	defer rt.Close()
	return extract(ctx, r, rt, opts)
}

// ExtractAt extracts like Extract, with entry names relative to base, an
// absolute sandbox path (such as the x-cwd header of fs/write), in a
// sandbox whose "/" is the host directory root. base is created when
// missing, and entries may not leave it.
func ExtractAt(ctx context.Context, r io.Reader, root, base string, opts Options) ([]Header, error) {
	if !strings.HasPrefix(base, "/") || strings.IndexByte(base, 0) >= 0 {
		return nil, fmt.Errorf("tarx: base %q is not an absolute path", base)
	}
	rel := strings.TrimPrefix(path.Clean(base), "/")
	if rel == "" {
		rel = "."
	}
	rt, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("tarx: %w", err)
	}
	defer rt.Close()
	local := filepath.FromSlash(rel)
	if err := rt.MkdirAll(local, dirMode(opts)); err != nil {
		return nil, fmt.Errorf("tarx: base %q: %w", base, err)
	}
	sub, err := rt.OpenRoot(local)
	if err != nil {
		return nil, fmt.Errorf("tarx: base %q: %w", base, err)
	}
	defer sub.Close()
	return extract(ctx, r, sub, opts)
}

func dirMode(opts Options) fs.FileMode {
	if opts.DirMode == 0 {
		return 0o755
	}
	return opts.DirMode.Perm()
}

// localName cleans an entry name and checks that it stays inside the
// extraction directory. It returns the host-style relative name ("." for
// the directory itself).
func localName(name string) (string, error) {
	if name == "" || strings.IndexByte(name, 0) >= 0 || strings.HasPrefix(name, "/") {
		return "", ErrUnsafePath
	}
	c := path.Clean(name)
	if c == "." {
		return ".", nil
	}
	local := filepath.FromSlash(c)
	if !filepath.IsLocal(local) {
		return "", ErrUnsafePath
	}
	return local, nil
}

// targetName is where the entry called name goes, relative to the
// extraction directory.
func targetName(opts Options, name string) (string, error) {
	if opts.Target == nil {
		return localName(name)
	}
	t, err := opts.Target(name)
	if err != nil {
		return "", err
	}
	if t != "." && !filepath.IsLocal(t) {
		return "", ErrUnsafePath
	}
	return t, nil
}

func extract(ctx context.Context, r io.Reader, rt *os.Root, opts Options) ([]Header, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("tarx: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	buf := make([]byte, 64<<10)
	var (
		out   []Header
		total int64
	)
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, &EntryError{Index: i, Err: err}
		}
		fail := func(err error) ([]Header, error) {
			if cerr := ctx.Err(); cerr != nil {
				return out, cerr
			}
			return out, &EntryError{Index: i, Name: h.Name, Err: err}
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		if opts.MaxEntries > 0 && i >= opts.MaxEntries {
			return fail(fmt.Errorf("%w: more than %d", ErrTooMany, opts.MaxEntries))
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		case tar.TypeSymlink, tar.TypeLink:
			if opts.SkipSpecial {
				continue
			}
			return fail(fmt.Errorf("%w (link to %q)", ErrLink, h.Linkname))
		default:
			if opts.SkipSpecial {
				continue
			}
			return fail(fmt.Errorf("%w %q", ErrUnsupported, h.Typeflag))
		}
		name, err := targetName(opts, h.Name)
		if err != nil {
			return fail(err)
		}
		if h.Typeflag == tar.TypeDir {
			if name != "." {
				if err := rt.MkdirAll(name, dirMode(opts)); err != nil {
					return fail(err)
				}
				if err := rt.Chmod(name, fs.FileMode(h.Mode&0o777)|0o700); err != nil {
					return fail(err)
				}
			}
			out = append(out, header(h))
			continue
		}
		if name == "." {
			return fail(ErrUnsafePath)
		}
		if opts.MaxEntrySize > 0 && h.Size > opts.MaxEntrySize {
			return fail(fmt.Errorf("%w: %d bytes, at most %d per file", ErrTooLarge, h.Size, opts.MaxEntrySize))
		}
		if opts.MaxTotalSize > 0 && h.Size > opts.MaxTotalSize-total {
			return fail(fmt.Errorf("%w: more than %d bytes in all", ErrTooLarge, opts.MaxTotalSize))
		}
		total += h.Size
		if err := writeFile(ctx, rt, name, h, tr, buf, dirMode(opts)); err != nil {
			return fail(err)
		}
		out = append(out, header(h))
	}
	if err := drain(gz); err != nil {
		return out, err
	}
	return out, nil
}

// writeFile creates name with the content of the current entry.
func writeFile(ctx context.Context, rt *os.Root, name string, h *tar.Header, content io.Reader, buf []byte, dirPerm fs.FileMode) (err error) {
	if dir := filepath.Dir(name); dir != "." {
		if err := rt.MkdirAll(dir, dirPerm); err != nil {
			return err
		}
	}
	// Refuse to open a directory, device or FIFO that is in the way (opening
	// a FIFO for writing would block).
	if st, err := rt.Stat(name); err == nil && !st.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", filepath.ToSlash(name))
	}
	// O_NONBLOCK: a FIFO put in the way after the check above fails to
	// open (or opens at once) rather than blocking; it changes nothing
	// for a regular file.
	f, err := rt.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNonblock, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if st, err := f.Stat(); err != nil {
		return err
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", filepath.ToSlash(name))
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := content.Read(buf)
		if n > 0 {
			if _, err := f.Write(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	return f.Chmod(fs.FileMode(h.Mode & 0o777))
}
