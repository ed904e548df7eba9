package isolated_test

import (
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// BenchmarkIsolatedStart measures one isolated sandbox: namespaces, root
// filesystem, limits, a trivial command, and its end.
func BenchmarkIsolatedStart(b *testing.B) {
	b.Run("cgroups", func(b *testing.B) { benchStart(b, newIsolated(b)) })
	b.Run("rlimits", func(b *testing.B) { benchStart(b, newIsolated(b, isolated.NoCgroups())) })
}

func benchStart(b *testing.B, iso *isolated.Executor) {
	dir := b.TempDir()
	for b.Loop() {
		p, err := iso.Start(b.Context(), &local.Cmd{Name: "true", Cwd: "/vercel/sandbox", Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}

// BenchmarkCommandThroughAPI measures a command run through the client and
// the fake's HTTP API, with each executor; the difference between the two
// is the per-command cost of isolation.
func BenchmarkCommandThroughAPI(b *testing.B) {
	for _, tc := range []struct {
		name string
		exec func(b *testing.B) local.Executor
	}{
		{"host", func(*testing.B) local.Executor { return hostexec.New() }},
		{"isolated", func(b *testing.B) local.Executor { return newIsolated(b) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := sandboxtest.NewServer(b, local.WithExecutor(tc.exec(b)))
			ctx := b.Context()
			sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := sb.Run(ctx, &command.Cmd{Name: "true"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
