package sandbox_test

import (
	"context"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// downloadServer returns a fake whose sandbox holds a file of uploadSize
// random bytes, and its path.
func downloadServer(b *testing.B) (*sandboxtest.Server, *sandbox.Sandbox, string) {
	b.Helper()
	srv, _, sb := benchServer(b)
	_, random := uploadData()
	const path = "big.bin"
	if err := sb.FS().WriteFiles(context.Background(), []files.Entry{files.FromBytes(path, random)}, atLevel(gzip.NoCompression)); err != nil {
		b.Fatal(err)
	}
	return srv, sb, path
}

// benchDownload runs open, which starts a download of the 64 MiB file of
// downloadServer, and copies the body to io.Discard.
func benchDownload(b *testing.B, open func() io.ReadCloser) {
	b.SetBytes(uploadSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rc := open()
		n := discardAll(b, rc)
		rc.Close()
		if n != uploadSize {
			b.Fatalf("read %d bytes", n)
		}
	}
}

// BenchmarkReadFile downloads a 64 MiB file from the fake through
// FileSystem.Open into io.Discard. Compare with BenchmarkReadFileCopy.
func BenchmarkReadFile(b *testing.B) {
	_, sb, path := downloadServer(b)
	ctx := context.Background()
	benchDownload(b, func() io.ReadCloser {
		rc, err := sb.FS().Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		return rc
	})
}

// BenchmarkReadFileCopy is the bound for BenchmarkReadFile: the same
// request with net/http alone, its body copied with io.Copy.
func BenchmarkReadFileCopy(b *testing.B) {
	srv, sb, path := downloadServer(b)
	read := rawPost(b, srv, sb, "/fs/read", `{"path":"`+path+`"}`)
	benchDownload(b, func() io.ReadCloser { return read().Body })
}
