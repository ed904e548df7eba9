//go:build unix

package local_test

import (
	"context"
	"testing"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// The benchmarks of this file measure the fake itself, through the
// client: how long a test waits for a sandbox and for a command, with the
// scripted executor and with the host executor (real processes).

// benchFakes are the two executors compared.
var benchFakes = []struct {
	name string
	opts func() []local.Option
}{
	{"script", func() []local.Option {
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
		return []local.Option{local.WithExecutor(s)}
	}},
	{"local", func() []local.Option {
		return []local.Option{local.WithExecutor(hostexec.New()), local.WithHostPaths(true)}
	}},
}

// BenchmarkFakeCreate is the latency of creating a sandbox (a directory
// and a session) one at a time, and the throughput of creating them from
// GOMAXPROCS goroutines at once.
func BenchmarkFakeCreate(b *testing.B) {
	for _, f := range benchFakes {
		b.Run(f.name, func(b *testing.B) {
			c := sandboxtest.NewServer(b, f.opts()...).Client()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Create(ctx, sandbox.CreateParams{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("script/parallel", func(b *testing.B) {
		c := sandboxtest.NewServer(b, benchFakes[0].opts()...).Client()
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Create(ctx, sandbox.CreateParams{}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkFakeCommandStart is the latency of starting a detached command
// (the call returns once the command runs), and of an attached run of
// true from request to exit status.
func BenchmarkFakeCommandStart(b *testing.B) {
	for _, f := range benchFakes {
		b.Run(f.name+"/start", func(b *testing.B) {
			sb := benchSandbox(b, f.opts())
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h, err := sb.Command("true").Start(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if res, err := h.Wait(ctx); err != nil || res.ExitCode() != 0 {
					b.Fatal(res, err)
				}
				b.StartTimer()
			}
		})
		b.Run(f.name+"/run", func(b *testing.B) {
			sb := benchSandbox(b, f.opts())
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if res, err := sb.Command("true").Run(ctx); err != nil || res.ExitCode() != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

func benchSandbox(b *testing.B, opts []local.Option) *sandbox.Sandbox {
	b.Helper()
	sb, err := sandboxtest.NewServer(b, opts...).Client().Create(context.Background(), sandbox.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	return sb
}
