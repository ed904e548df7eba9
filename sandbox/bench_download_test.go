package sandbox_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// downloadServer returns a fake whose sandbox holds a file of uploadSize
// random bytes, and its path.
func downloadServer(b *testing.B) (*sandboxtest.Server, *sandbox.Sandbox, string) {
	b.Helper()
	srv, _, sb := benchServer(b)
	_, random := uploadData()
	const path = "big.bin"
	if err := sb.WriteFiles(context.Background(), []files.Entry{files.FromBytes(path, random)}, files.WithLevel(gzip.NoCompression)); err != nil {
		b.Fatal(err)
	}
	return srv, sb, path
}

// BenchmarkReadFile downloads a 64 MiB file from the fake through
// Sandbox.ReadFile into io.Discard. Compare with BenchmarkReadFileCopy.
func BenchmarkReadFile(b *testing.B) {
	_, sb, path := downloadServer(b)
	ctx := context.Background()
	b.SetBytes(uploadSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rc, err := sb.ReadFile(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil || n != uploadSize {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}

// BenchmarkReadFileCopy is the bound for BenchmarkReadFile: the same
// request with net/http alone, its body copied with io.Copy.
func BenchmarkReadFileCopy(b *testing.B) {
	srv, sb, path := downloadServer(b)
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/fs/read?teamId=" + local.TeamID
	body := `{"path":"` + path + `"}`
	hc := &http.Client{}
	b.SetBytes(uploadSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != uploadSize {
			b.Fatalf("copied %d bytes: %v", n, err)
		}
	}
}
