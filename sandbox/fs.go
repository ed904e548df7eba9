package sandbox

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// WriteFiles uploads entries into the sandbox as one streamed tar.gz: the
// archive is produced while it is sent, so memory stays bounded whatever
// the size. Relative paths are relative to the session's cwd; parent
// directories are created. Options set the compression level (default
// gzip.BestSpeed) and a progress callback. The upload is sent chunked,
// or with a Content-Length on a client made WithSizedUploads; a 411 or 400
// answer to a chunked upload is a *ChunkedUploadError.
//
// When every entry can be reopened (bytes, local files, fs.FS trees) a
// failed upload is retried and, after a 410, replayed on the resumed
// session. An upload with an entry read from a plain io.Reader is sent
// exactly once (a sized upload spooled to a file is retried from it).
func (s *Sandbox) WriteFiles(ctx context.Context, entries []files.Entry, opts ...files.Option) error {
	if len(entries) == 0 {
		return nil
	}
	// Fast compression unless the caller chose: the default level costs
	// four times the CPU for a few percent, and nothing on random data.
	opts = append([]files.Option{files.WithLevel(gzip.BestSpeed)}, opts...)
	replayable := true
	for _, e := range entries {
		replayable = replayable && e.Replayable()
	}
	body := &uploadBody{conf: s.c.upload, entries: entries, opts: opts}
	defer body.close()
	upload := func(sid string) error {
		cwd := s.Cwd()
		if !strings.HasPrefix(cwd, "/") {
			return fmt.Errorf("vercel sandbox: session %s reports a working directory that is not absolute (%q)", sid, cwd)
		}
		if err := files.Validate(cwd, entries, opts...); err != nil {
			return err
		}
		call := &httpcore.Call{Method: "POST", Path: sessionPath(sid) + "/fs/write", ContentType: wire.ContentGzip,
			Header: map[string][]string{"X-Cwd": {"/"}}, Op: "write files", SandboxName: s.name, SessionID: sid, Stream: true}
		// The archive is written while it is sent (or spooled first).
		if err := body.set(ctx, call, cwd, replayable); err != nil {
			return err
		}
		return body.explain(s.c.core.JSON(ctx, call, nil))
	}
	if replayable {
		return s.withSession(ctx, upload)
	}
	// A one-shot body cannot be replayed after a 410, so resume first if
	// the session is known to be gone, then send once.
	sid := s.SessionID()
	if s.c.autoResume && (sid == "" || s.Session().Status.Terminal()) {
		if err := s.resumeFrom(ctx, sid); err != nil {
			return err
		}
		sid = s.SessionID()
	}
	return upload(sid)
}

// WriteFile uploads one file with mode 0644. A path that names a
// directory ("a/", "a/.") is refused.
func (s *Sandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := checkFilePath("path", path); err != nil {
		return err
	}
	return s.WriteFiles(ctx, []files.Entry{files.FromBytes(path, data)})
}

// checkFilePath refuses, as an *InputError for field, a path that no file
// can have: the rules of files.Validate.
func checkFilePath(field, p string) error {
	err := files.Validate("/", []files.Entry{files.FromBytes(p, nil)})
	var ie *InputError
	if errors.As(err, &ie) {
		return apierr.Invalid(field, "%s", ie.Reason)
	}
	return err
}

// ReadOption refines ReadFile, ReadFileBytes and DownloadFile.
type ReadOption func(*readConfig)

type readConfig struct {
	cwd      string
	progress func(read, total int64)
}

// ReadCwd resolves a relative path against dir instead of the session's
// working directory.
func ReadCwd(dir string) ReadOption { return func(c *readConfig) { c.cwd = dir } }

// ReadProgress calls fn with the bytes read so far and the total size (-1
// when unknown) as the download proceeds.
func ReadProgress(fn func(read, total int64)) ReadOption {
	return func(c *readConfig) { c.progress = fn }
}

// notExist marks a 404 from fs/read as fs.ErrNotExist while keeping the
// API error reachable.
type notExist struct{ err error }

func (e *notExist) Error() string        { return "file does not exist" }
func (e *notExist) Unwrap() error        { return e.err }
func (e *notExist) Is(target error) bool { return target == fs.ErrNotExist }

// ReadFile opens a file of the sandbox for streaming. The caller must
// close it. A missing file gives an error matching fs.ErrNotExist (and
// ErrNotFound). An answer that is not file content is an error, never data.
func (s *Sandbox) ReadFile(ctx context.Context, path string, opts ...ReadOption) (io.ReadCloser, error) {
	var o readConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := checkPath("path", path); err != nil {
		return nil, err
	}
	if r := wire.TextFault(o.cwd); r != "" {
		return nil, apierr.Invalid("cwd", "ReadCwd %s", r)
	}
	var body io.ReadCloser
	err := s.withSession(ctx, func(sid string) error {
		resp, err := s.c.core.Do(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sid) + "/fs/read",
			JSON: wire.PathRequest{Path: path, Cwd: o.cwd}, Op: "read file", SandboxName: s.name, SessionID: sid, Stream: true})
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return &fs.PathError{Op: "read", Path: path, Err: &notExist{err: err}}
			}
			return err
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), wire.ContentOctet) {
			resp.Body.Close()
			return &apierr.DecodeError{Method: "POST", Path: sessionPath(sid) + "/fs/read", StatusCode: resp.StatusCode,
				RequestID: resp.Header.Get("X-Vercel-Id"),
				Err:       fmt.Errorf("unexpected content type %q reading %s", resp.Header.Get("Content-Type"), path)}
		}
		body = resp.Body
		if o.progress != nil {
			body = &progressReader{ReadCloser: resp.Body, total: resp.ContentLength, fn: o.progress}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return body, nil
}

type progressReader struct {
	io.ReadCloser
	n     atomic.Int64
	total int64
	fn    func(read, total int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	if n > 0 {
		p.fn(p.n.Add(int64(n)), p.total)
	}
	return n, err
}

// ReadFileBytes reads a whole file into memory. Use ReadFile for large
// files.
func (s *Sandbox) ReadFileBytes(ctx context.Context, path string, opts ...ReadOption) ([]byte, error) {
	rc, err := s.ReadFile(ctx, path, opts...)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// DownloadFile copies a sandbox file to a local path, creating parent
// directories. The local file appears complete or not at all (it is
// written to a temporary file and renamed). It returns the bytes copied.
func (s *Sandbox) DownloadFile(ctx context.Context, src, dst string, opts ...ReadOption) (int64, error) {
	if dst == "" {
		return 0, apierr.Invalid("dst", "empty")
	}
	rc, err := s.ReadFile(ctx, src, opts...)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.part")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(tmp, rc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return n, err
	}
	return n, nil
}

// MkDir creates one directory; its parent must exist. Relative paths are
// relative to the session's cwd.
func (s *Sandbox) MkDir(ctx context.Context, path string) error {
	if err := checkPath("path", path); err != nil {
		return err
	}
	return s.mkdir(ctx, wire.PathRequest{Path: path})
}

// MkDirAll creates a directory and any missing parents, through fs/mkdir
// with recursive: true (no command runs). An existing directory is not an
// error.
func (s *Sandbox) MkDirAll(ctx context.Context, path string) error {
	if err := checkPath("path", path); err != nil {
		return err
	}
	return s.mkdir(ctx, wire.PathRequest{Path: path, Recursive: true})
}

// mkdir sends fs/mkdir. A file_error answer that says the path exists, or
// that a parent is missing, also matches fs.ErrExist or fs.ErrNotExist.
func (s *Sandbox) mkdir(ctx context.Context, req wire.PathRequest) error {
	err := s.withSession(ctx, func(sid string) error {
		return s.c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sid) + "/fs/mkdir",
			JSON: req, Op: "make directory", SandboxName: s.name, SessionID: sid}, nil)
	})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "file_error" {
		return err
	}
	msg := strings.ToLower(ae.Message)
	switch {
	case strings.Contains(msg, "already exists") || strings.Contains(msg, "file exists"):
		return fmt.Errorf("%w (%w)", err, fs.ErrExist)
	case strings.Contains(msg, "does not exist") || strings.Contains(msg, "no such file"):
		return fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
	}
	return err
}
