package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

func TestWriteFilesRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("files")

	local := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(local, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(local, "bin", "run.sh"), []byte("#!/bin/sh\necho run\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(local, "README"), []byte("local readme"), 0o600))
	dirEntries, err := files.FromDir("/opt/app", local, files.TreeParams{})
	require.NoError(t, err)

	mapfs := fstest.MapFS{
		"src/main.go":   {Data: []byte("package main\n"), Mode: 0o644},
		"src/tool.py":   {Data: []byte("print(1)\n"), Mode: 0o755},
		"src/ignored/x": {Data: []byte("x"), Mode: 0o600},
	}
	fsEntries, err := files.FromFS("project", mapfs, "src", files.TreeParams{})
	require.NoError(t, err)

	entries := []files.Entry{
		files.FromBytes("bytes.txt", []byte("from bytes")),
		files.FromBytes("string.txt", []byte("from a string")),
		files.FromReader("nested/dir/reader.txt", strings.NewReader("from a reader"), int64(len("from a reader"))),
	}
	entries = append(entries, fsEntries...)
	entries = append(entries, dirEntries...)
	require.NoError(t, sb.FS().WriteFiles(t.Context(), entries, files.WriteParams{}))

	want := map[string]string{
		"bytes.txt":             "from bytes",
		"/vercel/string.txt":    "from a string",
		"nested/dir/reader.txt": "from a reader",
		"project/main.go":       "package main\n",
		"project/tool.py":       "print(1)\n",
		"project/ignored/x":     "x",
		"/opt/app/bin/run.sh":   "#!/bin/sh\necho run\n",
		"/opt/app/README":       "local readme",
	}
	for p, content := range want {
		got, err := sb.FS().ReadFile(t.Context(), p)
		require.NoError(t, err, p)
		assert.Equal(t, content, string(got), p)
	}

	modes := map[string]fs.FileMode{
		"/vercel/bytes.txt":       0o644,
		"/vercel/project/tool.py": 0o755,
		"/vercel/project/main.go": 0o644,
		"/opt/app/bin/run.sh":     0o755,
		"/opt/app/README":         0o600,
	}
	for p, mode := range modes {
		host, err := e.srv.HostPath("files", p)
		require.NoError(t, err)
		st, err := os.Stat(host)
		require.NoError(t, err, p)
		assert.Equal(t, mode, st.Mode().Perm(), p)
	}

	writes := requests(e.srv, http.MethodPost, "/fs/write")
	require.Len(t, writes, 1, "one archive")
	assert.Equal(t, "application/gzip", writes[0].Header.Get("Content-Type"))
	assert.Equal(t, "/", writes[0].Header.Get("X-Cwd"))
}

func TestWriteFileModeOverride(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("modes")
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{
		files.FromBytes("exec.sh", []byte("#!/bin/sh\n")).WithMode(0o750),
	}, files.WriteParams{}))
	host, err := e.srv.HostPath("modes", "exec.sh")
	require.NoError(t, err)
	st, err := os.Stat(host)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o750), st.Mode().Perm())

	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("bad", []byte("x")).WithMode(fs.ModeDir | 0o755)}, files.WriteParams{})
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assert.Len(t, requests(e.srv, http.MethodPost, "/fs/write"), 1, "an invalid entry sends nothing")
}

func TestWriteFilesPathRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("paths")
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{
		files.FromBytes("rel.txt", []byte("rel")),
		files.FromBytes("/etc/app.conf", []byte("abs")),
		files.FromBytes("a/../b.txt", []byte("dotdot inside")),
		files.FromBytes("../up.txt", []byte("one up")),
		files.FromBytes("//srv//data/./x.txt", []byte("cleaned")),
	}, files.WriteParams{}))
	for sandboxPath, content := range map[string]string{
		"/vercel/rel.txt": "rel",
		"/etc/app.conf":   "abs",
		"/vercel/b.txt":   "dotdot inside",
		"/up.txt":         "one up",
		"/srv/data/x.txt": "cleaned",
	} {
		host, err := e.srv.HostPath("paths", sandboxPath)
		require.NoError(t, err)
		data, err := os.ReadFile(host)
		require.NoError(t, err, sandboxPath)
		assert.Equal(t, content, string(data), sandboxPath)
	}
	// Reads resolve relative paths against the cwd too.
	data, err := sb.FS().ReadFile(t.Context(), "../up.txt")
	require.NoError(t, err)
	assert.Equal(t, "one up", string(data))

	for _, bad := range [][]files.Entry{
		{files.FromBytes("/", []byte("root"))},
		{files.FromBytes("", []byte("empty"))},
		{files.FromBytes("dup.txt", []byte("1")), files.FromBytes("/vercel/dup.txt", []byte("2"))},
	} {
		assert.ErrorIs(t, sb.FS().WriteFiles(t.Context(), bad, files.WriteParams{}), sandbox.ErrInvalidInput)
	}
	assert.Len(t, requests(e.srv, http.MethodPost, "/fs/write"), 1)
}

func TestReadFileMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("missing")
	rc, err := sb.FS().Open(t.Context(), "nope.txt")
	assert.Nil(t, rc)
	require.Error(t, err)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, err, sandbox.ErrNotFound)
	var pe *fs.PathError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "nope.txt", pe.Path)
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.StatusCode)

	_, err = sb.FS().DownloadFile(t.Context(), "nope.txt", filepath.Join(t.TempDir(), "x"), sandbox.DownloadParams{})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = sb.FS().Open(t.Context(), "")
	assert.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestReadFileJSONAnswerIsNotData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.HasSuffix(r.URL.Path, "/fs/read") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"error":{"code":"internal","message":"not file content"}}`)
			return
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "json"})
	require.NoError(t, err)
	require.NoError(t, sb.FS().WriteFile(t.Context(), "f.txt", []byte("real"), 0o644))

	data, err := sb.FS().ReadFile(t.Context(), "f.txt")
	require.Error(t, err)
	assert.Nil(t, data)
	assert.ErrorIs(t, err, sandbox.ErrDecode)
	var de *sandbox.DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, http.StatusOK, de.StatusCode)
	assert.NotErrorIs(t, err, fs.ErrNotExist)

	dst := filepath.Join(t.TempDir(), "out.txt")
	_, err = sb.FS().DownloadFile(t.Context(), "f.txt", dst, sandbox.DownloadParams{})
	require.Error(t, err)
	assert.NoFileExists(t, dst)
}

func TestDownloadFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("dl")
	content := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	require.NoError(t, sb.FS().WriteFile(t.Context(), "data.bin", content, 0o644))

	dir := t.TempDir()
	dst := filepath.Join(dir, "sub", "data.bin")
	var mu sync.Mutex
	var reports [][2]int64
	n, err := sb.FS().DownloadFile(t.Context(), "data.bin", dst, sandbox.DownloadParams{Progress: func(read, total int64) {
		mu.Lock()
		reports = append(reports, [2]int64{read, total})
		mu.Unlock()
	}})
	require.NoError(t, err)
	assert.Equal(t, int64(len(content)), n)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(content, got))
	left, err := os.ReadDir(filepath.Dir(dst))
	require.NoError(t, err)
	require.Len(t, left, 1, "no temporary file is left")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, reports)
	assert.Equal(t, [2]int64{int64(len(content)), int64(len(content))}, reports[len(reports)-1])
	for i := 1; i < len(reports); i++ {
		assert.Greater(t, reports[i][0], reports[i-1][0], "progress grows")
	}
}

func TestDownloadFileIsAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.HasSuffix(r.URL.Path, "/fs/read") {
			// Announce 1000 bytes, send 10, cut the connection.
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "0123456789")
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "atomic"})
	require.NoError(t, err)

	dir := t.TempDir()
	dst := filepath.Join(dir, "out.bin")
	require.NoError(t, os.WriteFile(dst, []byte("previous version"), 0o644))
	_, err = sb.FS().DownloadFile(t.Context(), "any", dst, sandbox.DownloadParams{})
	require.Error(t, err)
	got, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.Equal(t, "previous version", string(got), "a failed download leaves the old file")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, left, 1, "the temporary file is removed")
}

func TestMkDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("mkdir")
	require.NoError(t, sb.FS().Mkdir(t.Context(), "logs", 0o755))
	host, err := e.srv.HostPath("mkdir", "logs")
	require.NoError(t, err)
	assert.DirExists(t, host)

	err = sb.FS().Mkdir(t.Context(), "logs", 0o755)
	assert.ErrorIs(t, err, sandbox.ErrBadRequest, "already exists")
	assert.ErrorIs(t, err, fs.ErrExist, "400 file_error, as hosted Vercel answers")
	err = sb.FS().Mkdir(t.Context(), "a/b/c", 0o755)
	assert.ErrorIs(t, err, sandbox.ErrBadRequest, "not recursive")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorIs(t, sb.FS().Mkdir(t.Context(), "", 0o755), sandbox.ErrInvalidInput)

	reqs := requests(e.srv, http.MethodPost, "/fs/mkdir")
	require.Len(t, reqs, 3)
	assert.Equal(t, map[string]any{"path": "logs"}, jsonBody(t, reqs[0]))
}

func TestMkdirAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("mkdirall")
	require.NoError(t, sb.FS().MkdirAll(t.Context(), "p/q/r", 0o755))
	require.NoError(t, sb.FS().MkdirAll(t.Context(), "p/q/r", 0o755), "existing directories are fine")
	host, err := e.srv.HostPath("mkdirall", "p/q/r")
	require.NoError(t, err)
	assert.DirExists(t, host)
	assert.Zero(t, e.srv.CommandCount(), "fs/mkdir, no mkdir -p command")
	reqs := requests(e.srv, http.MethodPost, "/fs/mkdir")
	require.Len(t, reqs, 2)
	assert.Equal(t, map[string]any{"path": "p/q/r", "recursive": true}, jsonBody(t, reqs[0]))

	require.NoError(t, sb.FS().WriteFile(t.Context(), "file", []byte("x"), 0o644))
	err = sb.FS().MkdirAll(t.Context(), "file/sub", 0o755)
	assert.ErrorIs(t, err, sandbox.ErrBadRequest, "not under a file")
}

func TestWriteFilesProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("progress")
	var mu sync.Mutex
	var reports []files.Progress
	data := bytes.Repeat([]byte("x"), 256<<10)
	err := sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("a", data), files.FromBytes("b", data)},
		files.WriteParams{ProgressInterval: -1, Progress: func(p files.Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(reports), 3)
	last := reports[len(reports)-1]
	assert.True(t, last.Done)
	assert.Equal(t, int64(2*len(data)), last.Bytes)
	assert.Equal(t, int64(2*len(data)), last.TotalBytes)
	assert.Equal(t, 2, last.Entries)
	assert.Equal(t, writesBodySize(e), last.Compressed, "the archive size is what the server read")
}

func writesBodySize(e *env) int64 {
	reqs := requests(e.srv, http.MethodPost, "/fs/write")
	if len(reqs) == 0 {
		return -1
	}
	return reqs[len(reqs)-1].BodySize
}

func TestUploadRetryOnlyWhenReplayable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var n counter
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.HasSuffix(r.URL.Path, "/fs/write") && n.inc("write") <= 2 {
			// The first attempt of each of the two uploads meets a 503.
			_, _ = io.Copy(io.Discard, r.Body)
			writeAPIError(w, http.StatusServiceUnavailable, "unavailable", "try again")
			return
		}
		next.ServeHTTP(w, r)
	})
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "retry"})
	require.NoError(t, err)

	// A one-shot reader cannot be sent again: the 503 is the answer.
	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("once.txt", strings.NewReader("once"), 4)}, files.WriteParams{})
	var ae *sandbox.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusServiceUnavailable, ae.StatusCode)
	assert.ErrorIs(t, err, sandbox.ErrServer)
	assert.Equal(t, 1, n.get("write"), "not retried")

	// Bytes can be sent again: the retry succeeds.
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("twice.txt", []byte("twice"))}, files.WriteParams{}))
	assert.Equal(t, 3, n.get("write"), "one failure, one retry")
	got, err := sb.FS().ReadFile(t.Context(), "twice.txt")
	require.NoError(t, err)
	assert.Equal(t, "twice", string(got))
	_, err = sb.FS().ReadFile(t.Context(), "once.txt")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestWriteFilesCanceled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("cancel")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := sb.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("x", []byte("y"))}, files.WriteParams{})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Empty(t, requests(e.srv, http.MethodPost, "/fs/write"))
}

func TestOneShotUploadIsNotReplayedAfterGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sb := e.create("oneshot")
	old := sb.SessionID()
	require.NoError(t, e.srv.Stop(old)) // the handle does not know

	err := sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("r.txt", strings.NewReader("data"), 4)}, files.WriteParams{})
	require.ErrorIs(t, err, sandbox.ErrGone, "a consumed reader cannot be sent to the resumed session")
	assert.Empty(t, resumeRequests(e.srv))

	// Bytes can: the call resumes and replays.
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("b.txt", []byte("bytes"))}, files.WriteParams{}))
	assert.NotEqual(t, old, sb.SessionID())
	assert.Len(t, resumeRequests(e.srv), 1)

	// Now that the handle knows, a one-shot upload resumes first.
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("r.txt", strings.NewReader("data"), 4)}, files.WriteParams{}))
	got, err := sb.FS().ReadFile(t.Context(), "r.txt")
	require.NoError(t, err)
	assert.Equal(t, "data", string(got))
	assert.Len(t, resumeRequests(e.srv), 2)
}
