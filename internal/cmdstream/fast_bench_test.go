package cmdstream

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// benchLines are the shapes of the lines of BenchmarkLogDecode in the
// sandbox package.
var benchLines = []struct{ name, data string }{
	{"line", `line 123456 of the benchmark output\n`},
	{"16KiB", strings.Repeat("0123456789abcdef", 1<<10)},
}

// BenchmarkFastLog decodes one line of each of the shapes of
// BenchmarkLogDecode in the sandbox package, without the stream around it.
func BenchmarkFastLog(b *testing.B) {
	for _, c := range benchLines {
		line := []byte(`{"data":"` + c.data + `","stream":"stdout"}`)
		buf := make([]byte, len(line))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				copy(buf, line)
				if _, ok := fastFrame(buf); !ok {
					b.Fatal("slow path")
				}
			}
		})
	}
}

// BenchmarkHostedLog is BenchmarkFastLog through hostedLog, the decoder's
// path for those lines, with the newline that ends them.
func BenchmarkHostedLog(b *testing.B) {
	for _, c := range benchLines {
		line := []byte(`{"data":"` + c.data + `","stream":"stdout"}` + "\n")
		buf := make([]byte, len(line))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				copy(buf, line)
				if k, _, _ := hostedLog(buf); k == 0 {
					b.Fatal("slow path")
				}
			}
		})
	}
}

// BenchmarkDecoder decodes a body of one-line log frames in hosted
// Vercel's frame order, from memory: the decoder alone, without HTTP.
func BenchmarkDecoder(b *testing.B) {
	var body []byte
	const frames = 10_000
	for i := 0; i < frames; i++ {
		body = fmt.Appendf(body, `{"data":"line %d of the benchmark output\n","stream":"stdout"}`+"\n", i)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d := NewDecoder(bytes.NewReader(body), nil, "s", "c")
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
}
