package isolate

import (
	"syscall"
	"testing"
	"time"
)

// childCPU is the CPU time used by this process's waited-for children.
func childCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStart measures a sandbox running /bin/true; cpu-ms/op is the CPU
// time the sandbox used, which a loaded machine does not inflate.
func BenchmarkStart(b *testing.B) {
	b.Run("netns", func(b *testing.B) { benchStart(b, false) })
	b.Run("hostnet", func(b *testing.B) { benchStart(b, true) })
}

func benchStart(b *testing.B, network bool) {
	dir := b.TempDir()
	spec := &Spec{Name: "/bin/true", Cwd: "/vercel/sandbox", Writable: []Mount{{Host: dir, Path: "/vercel/sandbox"}}, Loopback: !network}
	cpu := childCPU()
	for b.Loop() {
		p, err := Start(spec, Options{Network: network})
		if err != nil {
			b.Skip(err)
		}
		if _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(childCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}
