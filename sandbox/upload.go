package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/bodypipe"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

// By default an upload is streamed with Transfer-Encoding: chunked: the
// archive is compressed while it is sent, so nothing waits for it and
// memory stays bounded (the official Python SDK does the same; the API
// accepts it). Some proxies refuse a request body without a length.
// Sized uploads declare a Content-Length instead, as the official
// TypeScript SDK does (it builds the whole archive in memory first). The
// length is computed when it can be: an archive written with
// gzip.NoCompression has a length known from the entries' sizes, and is
// still streamed. A compressed archive is first written to a temporary
// spool file, in bounded memory, and then sent from it; every attempt
// re-reads the file, and the file is removed when the upload ends, also
// on failure or cancellation.

// WithSizedUploads sends every upload (FileSystem.WriteFiles and
// WriteFile) with a Content-Length instead of chunked: for a proxy, or an
// API, that refuses chunked request bodies. Uploads written with
// files.WriteParams.Stored are streamed with their exact, computed length;
// others are first written to a temporary file in dir (os.TempDir() when
// dir is empty), which is removed when the upload ends. Progress
// (files.WriteParams.Progress) then reports the writing of that file.
//
// It is a client option, not a per-call one, because the need comes from
// the network path, the same for every upload: a program that forgot it
// on one call would fail only in production.
func WithSizedUploads(dir string) Option {
	return func(c *config) {
		if strings.IndexByte(dir, 0) >= 0 {
			c.errs = append(c.errs, apierr.Invalid("WithSizedUploads", "directory contains a NUL byte"))
		}
		c.upload = uploadConfig{sized: true, dir: dir}
	}
}

// uploadConfig says how uploads are sent.
type uploadConfig struct {
	sized bool   // with a Content-Length
	dir   string // of spool files; "" is os.TempDir()
}

// ChunkedUploadError is a 411 or 400 answer to an upload sent chunked,
// without a Content-Length: a server or a proxy in front of it may refuse
// such bodies, and WithSizedUploads sends them with a length. Err is the
// *APIError of the answer.
type ChunkedUploadError struct {
	StatusCode int
	Err        error
}

func (e *ChunkedUploadError) Error() string {
	return fmt.Sprintf("%v (the upload was sent chunked, without a Content-Length; "+
		"if a proxy or the server refuses chunked bodies, create the client with sandbox.WithSizedUploads)", e.Err)
}

// Unwrap returns the *APIError.
func (e *ChunkedUploadError) Unwrap() error { return e.Err }

// uploadBody makes the bodies of one WriteFiles call, for every session it
// is sent to, and releases what they hold (a spool file) on close.
type uploadBody struct {
	conf    uploadConfig
	entries []files.Entry
	params  files.WriteParams
	once    []io.Closer  // one-shot bodies
	spool   *spoolFile   // of the last cwd
	wire    atomic.Int64 // bytes of the archive the last attempt sent
}

// set gives call a body that writes the archive of the entries for cwd.
// A replayable body can be sent again; otherwise the call is sent once.
func (u *uploadBody) set(ctx context.Context, call *httpcore.Call, cwd string, replayable bool) error {
	write := func(ctx context.Context, w io.Writer) error {
		u.wire.Store(0)
		return files.WriteTarGz(ctx, &countingWriter{w: w, n: &u.wire}, cwd, u.entries, u.params)
	}
	if u.conf.sized {
		n, known, err := files.Length(cwd, u.entries, u.params)
		if err != nil {
			return err
		}
		if !known {
			return u.setSpooled(ctx, call, cwd, write)
		}
		call.ContentLength = n
	}
	if replayable {
		call.Body = func() (io.ReadCloser, error) { return bodypipe.New(ctx, write), nil }
		return nil
	}
	b := bodypipe.New(ctx, write)
	u.once = append(u.once, b)
	call.OneShot = b
	return nil
}

// setSpooled writes the archive to a spool file (once per cwd) and gives
// call a body that re-reads it on every attempt.
func (u *uploadBody) setSpooled(ctx context.Context, call *httpcore.Call, cwd string, write func(context.Context, io.Writer) error) error {
	if u.spool == nil || u.spool.cwd != cwd {
		if u.spool != nil {
			if err := u.spool.Close(); err != nil {
				return err
			}
			u.spool = nil
		}
		sp, err := newSpoolFile(ctx, u.conf.dir, cwd, write)
		if err != nil {
			return err
		}
		u.spool = sp
	}
	sp := u.spool
	call.ContentLength = sp.size
	call.Body = func() (io.ReadCloser, error) { return io.NopCloser(io.NewSectionReader(sp.f, 0, sp.size)), nil }
	return nil
}

// explain names WithSizedUploads in the error of a chunked upload that the
// server refused with 411 or 400.
func (u *uploadBody) explain(err error) error {
	var ae *APIError
	if u.conf.sized || !errors.As(err, &ae) ||
		(ae.StatusCode != http.StatusLengthRequired && ae.StatusCode != http.StatusBadRequest) {
		return err
	}
	return &ChunkedUploadError{StatusCode: ae.StatusCode, Err: err}
}

// close ends the one-shot bodies and removes the spool file.
func (u *uploadBody) close() error {
	for _, b := range u.once {
		b.Close()
	}
	if u.spool != nil {
		return u.spool.Close()
	}
	return nil
}

// spoolFile is an archive written to a temporary file.
type spoolFile struct {
	f    *os.File
	cwd  string
	size int64
}

// newSpoolFile writes an archive to a new temporary file in dir. The file
// is removed on failure.
func newSpoolFile(ctx context.Context, dir, cwd string, write func(context.Context, io.Writer) error) (*spoolFile, error) {
	f, err := os.CreateTemp(dir, "vercel-sandbox-upload-*.tar.gz")
	if err != nil {
		return nil, fmt.Errorf("vercel sandbox: spool file for a sized upload: %w", err)
	}
	sp := &spoolFile{f: f, cwd: cwd}
	bw := bufio.NewWriterSize(f, 64<<10)
	err = write(ctx, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		sp.size, err = f.Seek(0, io.SeekCurrent)
	}
	if err != nil {
		_ = sp.Close()
		return nil, err
	}
	return sp, nil
}

// Close closes and removes the file.
func (sp *spoolFile) Close() error {
	cerr := sp.f.Close()
	if err := os.Remove(sp.f.Name()); err != nil {
		return err
	}
	return cerr
}

// countingWriter counts the bytes written through it into n.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
