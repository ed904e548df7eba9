package local_test

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

func gzipHeaders() []string { return []string{"Content-Type", "application/gzip", "x-cwd", "/"} }

func TestFilesRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "files"})
	sid := r.Session.ID
	cwdHost, err := h.srv.HostPath("files", "/vercel/sandbox")
	require.NoError(t, err)
	assert.DirExists(t, cwdHost)

	// Entry names as the official SDK builds them: relative to x-cwd "/".
	archive := tarGz(t,
		tarFile{name: "vercel/sandbox/hello.txt", body: "hello"},
		tarFile{name: "vercel/sandbox/bin/run.sh", body: "#!/bin/sh\n", mode: 0o755},
		tarFile{name: "etc/app.conf", body: "conf"},
		tarFile{name: strings.Repeat("d/", 60) + "deep.txt", body: "long name"},
		tarFile{name: "vercel/sandbox/ünïcode.txt", body: "pax"},
	)
	raw := h.ok("POST", sessPath(sid, "/fs/write"), archive, nil, gzipHeaders()...)
	assert.JSONEq(t, `{}`, string(raw))

	resp := h.request(t.Context(), "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "hello.txt"})
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, `attachment; filename=hello.txt`, resp.Header.Get("Content-Disposition"))
	assert.Equal(t, "hello", string(body))

	for path, want := range map[string]string{
		"/etc/app.conf": "conf",
		"bin/run.sh":    "#!/bin/sh\n",
		"/" + strings.Repeat("d/", 60) + "deep.txt": "long name",
		"ünïcode.txt": "pax",
	} {
		status, got := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": path})
		assert.Equal(t, 200, status, path)
		assert.Equal(t, want, string(got), path)
	}
	status, got := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "run.sh", "cwd": "/vercel/sandbox/bin"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "#!/bin/sh\n", string(got))

	host, err := h.srv.HostPath("files", "bin/run.sh")
	require.NoError(t, err)
	info, err := os.Stat(host)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	assert.Equal(t, filepath.Join(cwdHost, "bin", "run.sh"), host)

	// Without x-cwd the archive lands in the session's cwd.
	h.ok("POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: "rel.txt", body: "r"}), nil, "Content-Type", "application/gzip")
	status, got = h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "/vercel/sandbox/rel.txt"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "r", string(got))

	h.fail(404, "not_found", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "missing.txt"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "bin"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/read"), map[string]any{})

	var empty map[string]any
	h.ok("POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "newdir"}, &empty)
	assert.Empty(t, empty)
	assert.DirExists(t, filepath.Join(cwdHost, "newdir"))
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "newdir"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "a/b"})
	h.ok("POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "inner", "cwd": "/vercel/sandbox/newdir"}, nil)
	assert.DirExists(t, filepath.Join(cwdHost, "newdir", "inner"))

	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/write"), []byte("not gzip"), gzipHeaders()...)
}

func TestFilesConfinementVirtual(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "virt"})
	sid := r.Session.ID
	for _, name := range []string{"../escape.txt", "a/../../escape.txt", "/abs.txt"} {
		h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: name, body: "x"}), gzipHeaders()...)
	}
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/write"),
		tarGz(t, tarFile{name: "vercel/sandbox/link", typ: tar.TypeSymlink, link: "/etc/passwd"}), gzipHeaders()...)

	// In the virtual filesystem ".." cannot climb above "/": this is the
	// sandbox's own /etc/passwd, never the host's.
	status, body := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "../../../../etc/passwd"})
	require.Equal(t, 200, status)
	require.Contains(t, string(body), local.DefaultUser+":x:1000:1000:")

	// A symbolic link that leads out of the sandbox directory is refused.
	host, err := h.srv.HostPath("virt", "escape")
	require.NoError(t, err)
	require.NoError(t, os.Symlink("/etc", host))
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "escape/hostname"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: "vercel/sandbox/escape/x", body: "x"}), gzipHeaders()...)
}

func TestHostPathMode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, local.WithHostPaths(true))
	r := h.create(map[string]any{"name": "hosted"})
	sid := r.Session.ID
	_, err := h.srv.HostPath("hosted", "/")
	require.Error(t, err, "the host / is outside the sandbox")
	cwd := r.Session.Cwd
	assert.True(t, filepath.IsAbs(cwd))
	assert.True(t, strings.HasSuffix(cwd, "/vercel/sandbox"), cwd)
	assert.DirExists(t, cwd)
	root, err := h.srv.HostPath("hosted", ".")
	require.NoError(t, err)
	assert.Equal(t, cwd, root)

	// The SDK joins relative names onto the session cwd and strips the
	// leading slash, since it extracts at "/".
	h.ok("POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: strings.TrimPrefix(cwd, "/") + "/hello.txt", body: "hi"}), nil, gzipHeaders()...)
	data, err := os.ReadFile(filepath.Join(cwd, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi", string(data))
	status, got := h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "hello.txt"})
	assert.Equal(t, 200, status)
	assert.Equal(t, "hi", string(got))

	var started wire.CommandResponse
	h.ok("POST", sessPath(sid, "/cmd"), map[string]any{"command": "pwd", "args": []string{}, "env": map[string]string{}, "sudo": false}, &started)
	assert.Equal(t, cwd, started.Command.Cwd)
	h.wait(sid, started.Command.ID)
	stdout, _, err := h.srv.Output(started.Command.ID)
	require.NoError(t, err)
	assert.Equal(t, cwd+"\n"+cwd+"\n", stdout)

	// Everything outside the sandbox's directory is refused.
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "/etc/hostname"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/read"), map[string]any{"path": "../../../../../../etc/hostname"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "/tmp/outside"})
	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: "etc/evil", body: "x"}), gzipHeaders()...)
	h.fail(400, "bad_request", "POST", sessPath(sid, "/cmd"), map[string]any{"command": "pwd", "cwd": "/"})
	assert.NoFileExists(t, "/etc/evil")
}
