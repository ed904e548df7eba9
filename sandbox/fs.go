package sandbox

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// writeFiles sends an upload; see FileSystem.WriteFiles.
func (s *Sandbox) writeFiles(ctx context.Context, entries []files.Entry, p files.WriteParams) error {
	if len(entries) == 0 {
		return files.Validate("/", nil, p)
	}
	// Fast compression unless the caller chose: the default level costs
	// four times the CPU for a few percent, and nothing on random data.
	if p.Level == 0 && !p.Stored {
		p.Level = gzip.BestSpeed
	}
	replayable := true
	for _, e := range entries {
		replayable = replayable && e.Replayable()
	}
	body := &uploadBody{conf: s.c.upload, entries: entries, params: p}
	defer body.close()
	upload := func(sid string) error {
		cwd := s.Cwd()
		if !strings.HasPrefix(cwd, "/") {
			return fmt.Errorf("vercel sandbox: session %s reports a working directory that is not absolute (%q)", sid, cwd)
		}
		if err := files.Validate(cwd, entries, p); err != nil {
			return err
		}
		call := &httpcore.Call{Method: "POST", Path: sessionPath(sid) + "/fs/write", ContentType: wire.ContentGzip,
			Header: map[string][]string{"X-Cwd": {"/"}}, Op: "write files", SandboxName: s.name, SessionID: sid, Stream: true}
		// The archive is written while it is sent (or spooled first).
		if err := body.set(ctx, call, cwd, replayable); err != nil {
			return err
		}
		err := body.explain(s.c.core.JSON(ctx, call, nil))
		observe.Set(ctx, slog.Int64(observe.KeyWireBytes, body.wire.Load()))
		return err
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

// checkFilePath refuses, as an *InputError for field, a path that no file
// can have: the rules of files.Validate.
func checkFilePath(field, p string) error {
	err := files.Validate("/", []files.Entry{files.FromBytes(p, nil)}, files.WriteParams{})
	var ie *InputError
	if errors.As(err, &ie) {
		return apierr.Invalid(field, "%s", ie.Reason)
	}
	return err
}

// notExist marks a 404 from fs/read as fs.ErrNotExist while keeping the
// API error reachable.
type notExist struct{ err error }

func (e *notExist) Error() string        { return "file does not exist" }
func (e *notExist) Unwrap() error        { return e.err }
func (e *notExist) Is(target error) bool { return target == fs.ErrNotExist }

// open opens a file for streaming through the file API and returns its
// size (-1 when unknown). A missing file gives an error matching
// fs.ErrNotExist (and ErrNotFound). An answer that is not file content is
// an error, never data.
func (s *Sandbox) open(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	if err := checkPath("name", path); err != nil {
		return nil, 0, err
	}
	var body io.ReadCloser
	var size int64
	err := s.withSession(ctx, func(sid string) error {
		resp, err := s.c.core.Do(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sid) + "/fs/read",
			JSON: wire.PathRequest{Path: path}, Op: "read file", SandboxName: s.name, SessionID: sid, Stream: true})
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return &fs.PathError{Op: "open", Path: path, Err: &notExist{err: err}}
			}
			return err
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), wire.ContentOctet) {
			resp.Body.Close()
			return &apierr.DecodeError{Method: "POST", Path: sessionPath(sid) + "/fs/read", StatusCode: resp.StatusCode,
				RequestID: resp.Header.Get("X-Vercel-Id"),
				Err:       fmt.Errorf("unexpected content type %q reading %s", resp.Header.Get("Content-Type"), path)}
		}
		body, size = resp.Body, resp.ContentLength
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return body, size, nil
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

// download is FileSystem.DownloadFile.
func (f *FileSystem) download(ctx context.Context, name, localPath string, p DownloadParams) (int64, error) {
	if localPath == "" {
		return 0, apierr.Invalid("localPath", "empty")
	}
	var rc io.ReadCloser
	total := int64(-1)
	var err error
	if f.user != nil {
		rc, err = f.user.open(ctx, name)
	} else {
		rc, total, err = f.sb.open(ctx, name)
	}
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if p.Progress != nil {
		rc = &progressReader{ReadCloser: rc, total: total, fn: p.Progress}
	}
	dir := filepath.Dir(localPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(localPath)+".*.part")
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(tmp, rc)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), localPath)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return n, err
	}
	return n, nil
}

// mkdir is Mkdir and MkdirAll: through the file API for the sandbox's
// default user and mode 0o755 (the API's own), else with mkdir.
func (f *FileSystem) mkdir(ctx context.Context, name string, perm fs.FileMode, all bool) error {
	if err := checkPath("name", name); err != nil {
		return err
	}
	bits, err := modeBits("perm", perm)
	if err != nil {
		return err
	}
	if f.user == nil && bits == 0o755 {
		return f.sb.mkdir(ctx, wire.PathRequest{Path: name, Recursive: all})
	}
	args := []string{"-m", fmt.Sprintf("%04o", bits), "--", name}
	if all {
		args = append([]string{"-p"}, args...)
	}
	_, err = f.ops().exec(ctx, "mkdir", name, "mkdir", args...)
	return err
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
