package local

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/tarx"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// beginFileOp checks that sess is running and registers a file operation
// that a stop waits for. Call the returned function when done.
func (s *Server) beginFileOp(sess *sessionRec) (func(), *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := statusError(sess.status); aerr != nil {
		return nil, aerr
	}
	sess.ops.Add(1)
	return sess.ops.Done, nil
}

// WithRefuseChunkedUploads makes fs/write answer 411 length_required to an
// upload sent without a Content-Length (Transfer-Encoding: chunked), as
// some proxies in front of the API do, so that a client configuration
// (sandbox.WithSizedUploads) can be tested. Hosted Vercel accepts both.
func WithRefuseChunkedUploads() Option { return func(c *config) { c.refuseChunked = true } }

// handleWriteFiles serves POST …/fs/write: a gzip-compressed tar archive
// extracted under the x-cwd header (default: the session's cwd).
func (s *Server) handleWriteFiles(w http.ResponseWriter, r *http.Request) *apiError {
	if s.cfg.refuseChunked && r.ContentLength < 0 {
		return errorf(http.StatusLengthRequired, "length_required", "an upload without a Content-Length is refused")
	}
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		return aerr
	}
	base := sess.cwd
	if x := r.Header.Get("x-cwd"); x != "" {
		base = s.resolvePath(sess.cwd, x)
	}
	done, aerr := s.beginFileOp(sess)
	if aerr != nil {
		return aerr
	}
	defer done()
	ctx, stopUpload := s.uploadContext(w, r, sess)
	defer stopUpload()

	target := func(name string) (string, error) {
		// A backslash is a byte of the name, as in any Linux path: a\b.txt
		// is one file, not b.txt in a directory a.
		clean := path.Clean(name)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return "", errors.New("entry " + strconv.Quote(name) + " escapes the extraction directory")
		}
		if s.cfg.hostPaths {
			clean = filepath.FromSlash(clean)
		}
		return s.relPath(sess.sb, s.resolvePath(base, clean))
	}
	room, err := s.uploadRoom(sess.sb)
	if err != nil {
		return badRequest("cannot extract the archive: %v", err)
	}
	// Each entry is mapped on its own: in host-path mode the SDK's x-cwd
	// "/" lies outside the sandbox directory while its entries lie inside.
	opts := tarx.Options{Target: target, MaxTotalSize: max(room, 0)}
	if _, err := tarx.Extract(ctx, r.Body, sess.sb.dir, opts); err != nil {
		if errors.Is(err, tarx.ErrTooLarge) || errors.Is(err, syscall.ENOSPC) {
			return badRequest("cannot extract the archive: %v: the disk quota of %d bytes per sandbox is reached", err, s.cfg.quota())
		}
		return badRequest("cannot extract the archive: %v", err)
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// handleReadFile serves POST …/fs/read.
func (s *Server) handleReadFile(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, _, rel, abs, done, aerr := s.pathRequest(r, sid)
	if aerr != nil {
		return aerr
	}
	f, info, err := openInSandbox(sess.sb.dir, rel)
	done() // an open file stays readable; do not hold up a stop
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notFound("File %s was not found.", abs)
		}
		return badRequest("cannot read %s: %v", abs, err)
	}
	defer f.Close()
	if info.IsDir() {
		return badRequest("%s is a directory.", abs)
	}
	h := w.Header()
	h.Set("Content-Type", wire.ContentOctet)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filepath.Base(rel)}))
	if info.Mode().IsRegular() {
		h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}

// errNotFile reports a FIFO, socket or device where a file was expected.
var errNotFile = errors.New("not a regular file or directory")

// openInSandbox opens rel inside dir without leaving it, even through
// symbolic links, and without blocking: a FIFO, socket or device (which
// a command may have put there) is refused.
func openInSandbox(dir, rel string) (*os.File, fs.FileInfo, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() && !info.IsDir() {
		err = errNotFile
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// handleMkdir serves POST …/fs/mkdir: one directory, not recursive.
func (s *Server) handleMkdir(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, req, rel, abs, done, aerr := s.pathRequest(r, sid)
	if aerr != nil {
		return aerr
	}
	defer done()
	root, err := os.OpenRoot(sess.sb.dir)
	if err != nil {
		return badRequest("cannot open the sandbox filesystem: %v", err)
	}
	defer root.Close()
	mkdir := root.Mkdir
	if req.Recursive {
		mkdir = root.MkdirAll
	}
	if err := mkdir(rel, 0o755); err != nil {
		// Hosted Vercel answers 400 file_error; the mock bad_request.
		code := codeBadRequest
		if s.hosted() {
			code = codeFileError
		}
		switch {
		case errors.Is(err, fs.ErrExist):
			return errorf(http.StatusBadRequest, code, "%s already exists.", abs)
		case errors.Is(err, fs.ErrNotExist):
			return errorf(http.StatusBadRequest, code, "The parent directory of %s does not exist.", abs)
		}
		return errorf(http.StatusBadRequest, code, "cannot create %s: %v", abs, err)
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

// requestPath resolves the path of an fs/read or fs/mkdir body. A path
// outside the sandbox (host-path mode only) is 400 bad_request, also for
// fs/read: an escape attempt is a client error, not a missing file.
func (s *Server) requestPath(sess *sessionRec, req wire.PathRequest) (rel, abs string, aerr *apiError) {
	base := sess.cwd
	if req.Cwd != "" {
		base = s.resolvePath(sess.cwd, req.Cwd)
	}
	abs = s.resolvePath(base, req.Path)
	rel, err := s.relPath(sess.sb, abs)
	if err != nil {
		return "", "", badRequest("Invalid path %q: %v", req.Path, err)
	}
	return rel, abs, nil
}

// pathRequest decodes the {path, cwd} body of fs/read and fs/mkdir and
// resolves it in the session's sandbox. On success the caller must call
// done when its file operation no longer needs to hold off a stop.
func (s *Server) pathRequest(r *http.Request, sid string) (sess *sessionRec, req wire.PathRequest, rel, abs string, done func(), aerr *apiError) {
	sess, aerr = s.lookupSession(sid, true)
	if aerr != nil {
		return nil, req, "", "", nil, aerr
	}
	if aerr := decodeBody(r, &req); aerr != nil {
		return nil, req, "", "", nil, aerr
	}
	if req.Path == "" {
		return nil, req, "", "", nil, badRequest("path must not be empty.")
	}
	rel, abs, aerr = s.requestPath(sess, req)
	if aerr != nil {
		return nil, req, "", "", nil, aerr
	}
	done, aerr = s.beginFileOp(sess)
	if aerr != nil {
		return nil, req, "", "", nil, aerr
	}
	return sess, req, rel, abs, done, nil
}

// uploadContext returns the context of an upload into sess: it ends with
// the request, or when the session stops, which also ends a read of the
// body that a stalled client would block, so that a stop never waits for a
// client. Call stop when the upload is over.
func (s *Server) uploadContext(w http.ResponseWriter, r *http.Request, sess *sessionRec) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(r.Context())
	rc := http.NewResponseController(w)
	fired := make(chan struct{})
	unhook := context.AfterFunc(sess.ctx, func() {
		defer close(fired)
		cancel()
		_ = rc.SetReadDeadline(time.Now())
	})
	return ctx, func() {
		if !unhook() {
			<-fired // the deadline is set: let the connection go with it
		}
		cancel()
	}
}
