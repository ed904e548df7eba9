package isolated_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// BenchmarkStart measures a sandbox start, the command true and its end:
// with the isolated executor (control groups or rlimits only), with bare
// bwrap on the same machine (the floor isolation costs), and with the host
// executor (the floor a command costs). isolated minus host is the
// per-command overhead of isolation.
func BenchmarkStart(b *testing.B) {
	b.Run("bwrap", benchBareBwrap)
	b.Run("isolated-cgroups", func(b *testing.B) { benchStart(b, newIsolated(b)) })
	b.Run("isolated-rlimits", func(b *testing.B) { benchStart(b, newIsolated(b, isolated.NoCgroups())) })
	b.Run("host", func(b *testing.B) { benchStart(b, hostexec.New()) })
}

func benchStart(b *testing.B, e local.Executor) {
	dir := b.TempDir()
	for b.Loop() {
		p, err := e.Start(b.Context(), &local.Cmd{Name: "true", Cwd: "/vercel/sandbox", Dir: dir, HostCwd: dir})
		if err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); err != nil || code != 0 {
			b.Fatal(code, err)
		}
	}
}

// benchBareBwrap runs true in bwrap with the namespaces, session and
// mounts of a minimal sandbox, and nothing else.
func benchBareBwrap(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("SKIPPED: bubblewrap is not installed")
	}
	args := []string{"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"}
	for _, d := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		if target, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", target, d)
		}
	}
	args = append(args, "--", "/usr/bin/true")
	for b.Loop() {
		if err := exec.Command(bwrap, args...).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommandThroughAPI measures a command run through the client and
// the local API, with each executor; the difference between the two is
// the per-command cost of isolation as a client sees it.
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
