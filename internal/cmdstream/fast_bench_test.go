package cmdstream

import (
	"strings"
	"testing"
)

// BenchmarkFastLog decodes one line of each of the shapes of
// BenchmarkLogDecode in the sandbox package, without the stream around it.
func BenchmarkFastLog(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"line", `line 123456 of the benchmark output\n`},
		{"16KiB", strings.Repeat("0123456789abcdef", 1<<10)},
	} {
		line := []byte(`{"data":"` + c.data + `","stream":"stdout"}`)
		buf := make([]byte, len(line))
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for i := 0; i < b.N; i++ {
				copy(buf, line)
				if _, ok := fastLog(buf); !ok {
					b.Fatal("slow path")
				}
			}
		})
	}
}
