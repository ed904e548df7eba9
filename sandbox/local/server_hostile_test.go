//go:build unix

package local_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// These tests plant on disk what a hostile command would leave in its
// sandbox (a FIFO, a link to a host directory, a sparse file) and check
// that the server's own file operations neither hang nor leave the sandbox.

// hang bounds a call that must not block; the bound only catches a hang.
func hang(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s hung", what)
	}
}

func TestHostileFIFODoesNotHangTheServer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "fifo"})
	host, err := h.srv.HostPath("fifo", "pipe")
	require.NoError(t, err)
	require.NoError(t, syscall.Mkfifo(host, 0o644))

	hang(t, "fs/read of a FIFO", func() {
		h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/fs/read"), map[string]any{"path": "pipe"})
	})
	hang(t, "fs/write over a FIFO", func() {
		status, _ := h.call("POST", sessPath(r.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "pipe", body: "x"}), "Content-Type", "application/gzip")
		assert.Equal(t, 400, status, "a FIFO in the way is refused")
	})
	hang(t, "snapshot of a tree with a FIFO", func() {
		h.ok("POST", sessPath(r.Session.ID, "/snapshot"), []byte{}, nil)
	})
	hang(t, "Close", h.srv.Close)
}

func TestHostilePlantedLinkStaysInTheSandbox(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "links"})
	sid := r.Session.ID
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600))
	lnk, err := h.srv.HostPath("links", "lnk")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(outside, lnk))

	// A command started in a directory behind the link.
	status, body := h.call("POST", sessPath(sid, "/cmd"), map[string]any{"command": "pwd", "cwd": "/vercel/sandbox/lnk/x/y"})
	assert.Equal(t, 400, status, "%s", body)
	assert.NoDirExists(t, filepath.Join(outside, "x"), "no host directory created through the link")

	h.fail(400, "bad_request", "POST", sessPath(sid, "/fs/mkdir"), map[string]any{"path": "lnk/made"})
	assert.NoDirExists(t, filepath.Join(outside, "made"))

	status, body = h.call("POST", sessPath(sid, "/fs/read"), map[string]any{"path": "lnk/secret"})
	assert.NotEqual(t, 200, status)
	assert.NotContains(t, string(body), "host secret", "no host file read through the link")

	status, _ = h.call("POST", sessPath(sid, "/fs/write"), tarGz(t, tarFile{name: "planted.txt", body: "x"}), "Content-Type", "application/gzip", "x-cwd", "/vercel/sandbox/lnk")
	assert.Equal(t, 400, status)
	assert.NoFileExists(t, filepath.Join(outside, "planted.txt"), "no host file written through the link")
}

func TestHostileSparseFileIsNotAmplified(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, local.WithDir(dir))
	r := h.create(map[string]any{"name": "sparse"})
	host, err := h.srv.HostPath("sparse", "sparse.img")
	require.NoError(t, err)
	f, err := os.Create(host)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("end"), 3<<30) // 3 GiB apparent, 4 KiB on disk
	require.NoError(t, err)
	require.NoError(t, f.Close())

	var snap struct {
		Snapshot wire.Snapshot `json:"snapshot"`
	}
	h.ok("POST", sessPath(r.Session.ID, "/snapshot"), []byte{}, &snap)
	assert.Less(t, snap.Snapshot.SizeBytes, int64(1<<20), "a snapshot counts the bytes it copies")
	assert.Less(t, diskUsage(t, dir), int64(64<<20), "the copy keeps the holes")
}

// diskUsage sums the blocks the files under dir take on disk.
func diskUsage(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		}
		return nil
	}))
	return n
}

func TestHostileUploadOverQuota(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, local.WithDir(dir), local.WithDiskQuota(1<<20))
	r := h.create(map[string]any{"name": "quota"})
	big := tarGz(t, tarFile{name: "big.bin", body: strings.Repeat("\x00", 3<<20)})
	require.Less(t, len(big), 64<<10, "the archive is small; what it expands to is not")
	d := h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/fs/write"), big, "Content-Type", "application/gzip")
	assert.Contains(t, d.Message, "disk quota")
	assert.Less(t, diskUsage(t, dir), int64(2<<20), "the disk holds at most the quota")

	h.ok("POST", sessPath(r.Session.ID, "/fs/write"), tarGz(t, tarFile{name: "small.txt", body: "fits"}), nil, "Content-Type", "application/gzip")
}

func TestHostileDataDirectoryIsPrivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	h := newHarness(t, local.WithDir(dir))
	h.create(map[string]any{"name": "private"})
	for _, sub := range []string{"sandboxes", "snapshots"} {
		info, err := os.Stat(filepath.Join(dir, sub))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "%s: no other host user may reach the sandboxes' files", sub)
	}
}

func TestHostileStalledUploadDoesNotHoldStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r := h.create(map[string]any{"name": "stall"})
	archive := tarGz(t, tarFile{name: "big.bin", body: strings.Repeat("x", 1<<20)})
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go func() { _, _ = pw.Write(archive[:len(archive)/2]) }() // then stall
	req, err := http.NewRequestWithContext(t.Context(), "POST", h.srv.URL()+sessPath(r.Session.ID, "/fs/write")+"?teamId=team_test", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.srv.Token())
	req.Header.Set("Content-Type", "application/gzip")
	uploaded := make(chan struct{})
	go func() {
		defer close(uploaded)
		if resp, err := h.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool {
		host, err := h.srv.HostPath("stall", "big.bin")
		return err == nil && fileExists(host)
	}, 30*time.Second, 5*time.Millisecond, "the upload has begun")
	hang(t, "Stop during a stalled upload", func() {
		h.ok("POST", sessPath(r.Session.ID, "/stop"), []byte{}, nil)
	})
	pw.Close()
	<-uploaded
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
