package files

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// DefaultMode is the mode of an entry whose source has none (bytes and
// readers), as in the official SDK.
const DefaultMode fs.FileMode = 0o644

// Entry is one file to upload: a destination path inside the sandbox, a mode
// and a source of content. Create entries with FromBytes, FromReader,
// FromFile, FromFS or FromDir; the zero Entry is invalid.
//
// An Entry is a small value that holds no open file: content is opened when
// the archive is written and closed right after. Apart from the local files
// that FromFile, FromFS and FromDir examine, entries are checked by Validate
// and by the writers, not by the constructors.
type Entry struct {
	path string
	mode fs.FileMode
	size int64
	open func() (io.ReadCloser, error)
	// once is set for sources that can be read only once (FromReader).
	once *atomic.Bool
	// invalid says why a constructor got unusable arguments.
	invalid string
}

// FromBytes returns an entry whose content is data. data is not copied and
// must not be modified until the archive has been written.
func FromBytes(path string, data []byte) Entry {
	return Entry{
		path: path,
		mode: DefaultMode,
		size: int64(len(data)),
		open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
	}
}

// FromReader returns an entry whose content is the next size bytes of r.
// The size must be known up front because a tar header precedes the content.
// Writing fails with ErrSizeMismatch when r yields fewer or more than size
// bytes. r is read once (the entry is not Replayable) and is not closed.
func FromReader(path string, r io.Reader, size int64) Entry {
	used := new(atomic.Bool)
	e := Entry{
		path: path,
		mode: DefaultMode,
		size: size,
		once: used,
		open: func() (io.ReadCloser, error) {
			if used.Swap(true) {
				return nil, ErrConsumed
			}
			return io.NopCloser(r), nil
		},
	}
	if r == nil {
		e.invalid = "nil reader"
	}
	return e
}

// FromFile returns an entry whose content is the local file at localPath,
// uploaded to dst. The file is examined now (it must be a regular file; a
// symbolic link is followed) for its size and mode, and opened only when the
// archive is written. The mode is the local file's permission bits, with
// setuid, setgid and sticky bits kept; use WithMode to change it. If the file
// changes size in between, writing fails with ErrSizeMismatch.
func FromFile(dst, localPath string) (Entry, error) {
	if localPath == "" {
		return Entry{}, apierr.Invalid("localPath", "empty path")
	}
	abs, err := filepath.Abs(localPath)
	if err != nil {
		return Entry{}, fmt.Errorf("files: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Entry{}, fmt.Errorf("files: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Entry{}, apierr.Invalid("localPath", "%s is not a regular file but %s", quote(localPath), kind(st.Mode()))
	}
	return Entry{
		path: dst,
		mode: sourceMode(st.Mode()),
		size: st.Size(),
		open: func() (io.ReadCloser, error) { return openRegular(os.Open(abs)) },
	}, nil
}

// openRegular checks that a freshly opened file is (still) a regular file.
func openRegular[F fs.File](f F, err error) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a regular file but %s", quote(st.Name()), kind(st.Mode()))
	}
	return f, nil
}

// kind names the type of a file that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "an irregular file"
}

// sourceMode keeps the bits of a local mode that an entry may carry.
func sourceMode(m fs.FileMode) fs.FileMode {
	return m & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// WithMode returns a copy of e with mode m: permission bits (0o755), plus
// optionally fs.ModeSetuid, fs.ModeSetgid and fs.ModeSticky (the Unix
// spellings 0o4000, 0o2000 and 0o1000 are accepted too). Any other bit, such
// as fs.ModeDir, makes the entry invalid.
func (e Entry) WithMode(m fs.FileMode) Entry {
	e.mode = m
	return e
}

// WithPath returns a copy of e with destination path p.
func (e Entry) WithPath(p string) Entry {
	e.path = p
	return e
}

// Path returns the destination path as given (relative to the session's
// working directory, or absolute). See the package doc for the archive name.
func (e Entry) Path() string { return e.path }

// Mode returns the mode the file will have in the sandbox.
func (e Entry) Mode() fs.FileMode { return e.mode }

// Size returns the content length in bytes.
func (e Entry) Size() int64 { return e.size }

// Replayable reports whether e's content can be read again, so that an
// archive containing it can be written more than once (for example to retry
// an upload). Only entries made by FromReader are not replayable.
func (e Entry) Replayable() bool { return e.once == nil }

// replayable reports whether every entry is replayable.
func replayable(entries []Entry) bool {
	for _, e := range entries {
		if !e.Replayable() {
			return false
		}
	}
	return true
}

// totalSize returns the sum of the entries' sizes: the number of content
// bytes an archive of them carries (headers and compression aside).
// Negative sizes count as zero.
func totalSize(entries []Entry) int64 {
	var n int64
	for _, e := range entries {
		if e.size > 0 {
			n += e.size
		}
	}
	return n
}

// ErrConsumed is returned when an entry made by FromReader is written a
// second time: its reader has already been read.
var ErrConsumed = errors.New("the reader of this entry was consumed by an earlier write")

// ErrSizeMismatch is returned when an entry's source yields fewer or more
// bytes than the entry's declared size.
var ErrSizeMismatch = errors.New("content length differs from the declared size")

// EntryError reports a failure to read the content of one entry while the
// archive was written. Err is the cause; errors.Is(err, ErrSizeMismatch)
// and errors.Is(err, ErrConsumed) work through it.
type EntryError struct {
	Index int    // position of the entry in the slice given to the writer
	Name  string // archive entry name
	Err   error
}

// Error implements error.
func (e *EntryError) Error() string {
	return fmt.Sprintf("files: entries[%d] (%s): %v", e.Index, e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *EntryError) Unwrap() error { return e.Err }

// modeMask holds the bits an entry's mode may have.
const modeMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky | 0o7000

// tarMode converts an entry mode to the mode field of a tar header.
func tarMode(m fs.FileMode) int64 {
	v := int64(m & 0o7777)
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return v
}
