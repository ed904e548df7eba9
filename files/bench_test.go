package files

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
)

const benchSize = 64 << 20

var benchData = sync.OnceValues(func() (text, random []byte) {
	// Text-like content: lines of words drawn with a Zipf distribution from
	// a vocabulary of 4096 pseudo-words, which gzip shrinks to about 37%
	// (BestSpeed: 41%), and incompressible random bytes.
	r := rand.New(rand.NewChaCha8([32]byte{42}))
	vocab := make([]string, 4096)
	for i := range vocab {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = "etaoinshrdlucmfwypvbgkqjxz_"[r.IntN(27)]
		}
		vocab[i] = string(w)
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	var b bytes.Buffer
	b.Grow(benchSize + 64)
	for b.Len() < benchSize {
		for range 1 + r.IntN(12) {
			b.WriteString(vocab[zipf.Uint64()])
			b.WriteByte(" .,( "[r.IntN(5)])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:benchSize], randomBytes(43, benchSize)
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
					if err := WriteTarGz(context.Background(), &out, cwd, entries, WithLevel(l.level)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.n)/float64(b.N)/benchSize, "ratio")
			})
		}
	}
}

// BenchmarkTarGzReader is BenchmarkWriteTarGz through NewTarGzReader and
// io.Copy, as an HTTP body would be read.
func BenchmarkTarGzReader(b *testing.B) {
	text, _ := benchData()
	entries := benchEntries(text)
	for _, l := range benchLevels {
		b.Run("text/"+l.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			b.ReportAllocs()
			for b.Loop() {
				rc, err := NewTarGzReader(context.Background(), cwd, entries, WithLevel(l.level))
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

// BenchmarkGzipOnly compresses the same 64 MiB with compress/gzip alone, in
// 64 KiB writes: the floor for BenchmarkWriteTarGz.
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
