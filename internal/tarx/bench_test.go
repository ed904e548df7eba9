package tarx

import (
	"archive/tar"
	"bytes"
	"context"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
)

// BenchmarkExtract extracts 64 MiB in one file, compressed at
// gzip.BestSpeed as uploads are by default, as the local API does for
// fs/write.
func BenchmarkExtract(b *testing.B) {
	const size = 64 << 20
	for _, d := range []struct {
		name string
		data []byte
	}{{"text", benchdata.Text(size)}, {"random", benchdata.Random(size)}} {
		b.Run(d.name, func(b *testing.B) {
			var archive bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&archive, gzip.BestSpeed)
			tw := tar.NewWriter(zw)
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.bin", Mode: 0o644, Size: size}); err != nil {
				b.Fatal(err)
			}
			if _, err := tw.Write(d.data); err != nil {
				b.Fatal(err)
			}
			if err := tw.Close(); err != nil {
				b.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Extract(context.Background(), bytes.NewReader(archive.Bytes()), dir, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
