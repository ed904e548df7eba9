package files

import (
	"bytes"
	"context"
	"github.com/klauspost/compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/tarx"
)

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	_, _ = r.Read(b)
	return b
}

// patternReader yields size bytes of a repeated pattern without holding
// them: a cheap source of large content.
type patternReader struct {
	pattern []byte
	off     int
	left    int64
}

func newPatternReader(size int64) *patternReader {
	return &patternReader{pattern: randomBytes(7, 64<<10), left: size}
}

func (r *patternReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.pattern[r.off:])
		n += c
		r.off = (r.off + c) % len(r.pattern)
	}
	r.left -= int64(n)
	return n, nil
}

// archive writes entries with WriteTarGz and returns the archive.
func archive(t testing.TB, entries []Entry, p ...WriteParams) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteTarGz(context.Background(), &buf, cwd, entries, append(p, WriteParams{})[0]))
	return buf.Bytes()
}

// extract extracts an archive into a new temporary directory standing for
// the sandbox's "/" and returns it.
func extract(t testing.TB, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	_, err := tarx.Extract(context.Background(), bytes.NewReader(data), dir, tarx.Options{})
	require.NoError(t, err)
	return dir
}

// contents maps entry names to contents.
func contents(t testing.TB, data []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := tarx.Walk(bytes.NewReader(data), func(h tarx.Header, r io.Reader) error {
		b, err := io.ReadAll(r)
		m[h.Name] = string(b)
		return err
	})
	require.NoError(t, err)
	return m
}

// readFile reads a sandbox path from an extraction directory.
func readFile(t testing.TB, root, sandboxPath string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(sandboxPath)))
	require.NoError(t, err)
	return string(b)
}

// errReader fails every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// failWriter fails once more than limit bytes were written.
type failWriter struct {
	limit int
	err   error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.limit {
		n := w.limit
		w.limit = 0
		return n, w.err
	}
	w.limit -= len(p)
	return len(p), nil
}

// atLevel asks for a gzip level as compress/gzip numbers it, where
// gzip.NoCompression is Stored.
func atLevel(level int) WriteParams {
	if level == gzip.NoCompression {
		return WriteParams{Stored: true}
	}
	return WriteParams{Level: level}
}
