package files

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
)

const benchSize = 64 << 20

// benchData is the text-like and the random content of the benchmarks,
// generated once.
var benchData = sync.OnceValues(func() (text, random []byte) {
	return benchdata.Text(benchSize), benchdata.Random(benchSize)
})

var benchLevels = []struct {
	name  string
	level int
}{
	{"Default", gzip.DefaultCompression},
	{"BestSpeed", gzip.BestSpeed},
	{"NoCompression", gzip.NoCompression},
}

// benchEntries splits data into 64 files of 1 MiB.
func benchEntries(data []byte) []Entry {
	const per = 1 << 20
	entries := make([]Entry, 0, len(data)/per)
	for i := 0; i < len(data); i += per {
		entries = append(entries, FromBytes(fmt.Sprintf("bench/%03d.bin", i/per), data[i:i+per]))
	}
	return entries
}

// BenchmarkWriteTarGz writes 64 MiB in 64 files with WriteTarGz.
func BenchmarkWriteTarGz(b *testing.B) {
	text, random := benchData()
	for _, d := range []struct {
		name string
		data []byte
	}{{"text", text}, {"random", random}} {
		entries := benchEntries(d.data)
		for _, l := range benchLevels {
			b.Run(d.name+"/"+l.name, func(b *testing.B) {
				b.SetBytes(benchSize)
				b.ReportAllocs()
				var out countWriter
				out.w = io.Discard
				for b.Loop() {
					if err := WriteTarGz(context.Background(), &out, cwd, entries, atLevel(l.level)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.n)/float64(b.N)/benchSize, "ratio")
			})
		}
	}
}

// BenchmarkTarGzReader is BenchmarkWriteTarGz through newTarGzReader and
// io.Copy, as an HTTP body would be read.
func BenchmarkTarGzReader(b *testing.B) {
	text, _ := benchData()
	entries := benchEntries(text)
	for _, l := range benchLevels {
		b.Run("text/"+l.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				rc, err := newTarGzReader(context.Background(), cwd, entries, atLevel(l.level))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, rc); err != nil {
					b.Fatal(err)
				}
				_ = rc.Close()
			}
		})
	}
}

// BenchmarkGzipOnly compresses the same 64 MiB with the compressor of
// WriteTarGz (github.com/klauspost/compress/gzip) alone, in 64 KiB writes:
// the bound for BenchmarkWriteTarGz.
func BenchmarkGzipOnly(b *testing.B) {
	text, random := benchData()
	for _, d := range []struct {
		name string
		data []byte
	}{{"text", text}, {"random", random}} {
		for _, l := range benchLevels {
			b.Run(d.name+"/"+l.name, func(b *testing.B) {
				b.SetBytes(benchSize)
				b.ReportAllocs()
				for b.Loop() {
					zw, err := gzip.NewWriterLevel(io.Discard, l.level)
					if err != nil {
						b.Fatal(err)
					}
					for i := 0; i < len(d.data); i += 64 << 10 {
						if _, err := zw.Write(d.data[i : i+64<<10]); err != nil {
							b.Fatal(err)
						}
					}
					if err := zw.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
