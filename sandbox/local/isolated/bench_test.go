package isolated_test

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// BenchmarkStart measures a sandbox start, the command true and its end,
// taking turns on each iteration so that the machine's load weighs on all
// alike: bare bwrap with the namespaces and mounts of a minimal sandbox
// (the floor isolation costs), the isolated executor with control groups
// and with rlimits only, and the host executor (the floor a command
// costs). It reports each one's time per start and the ratios docs/performance.md
// quotes: isolated over bare bwrap, and isolated minus host (the
// per-command overhead of isolation).
func BenchmarkStart(b *testing.B) {
	bare := bareBwrap(b)
	runs := []struct {
		name string
		run  func() error
		took time.Duration
	}{
		{name: "bwrap", run: func() error { return exec.Command(bare[0], bare[1:]...).Run() }},
		{name: "isolated-cgroups", run: startTrue(b, newIsolated(b))},
		{name: "isolated-rlimits", run: startTrue(b, newIsolated(b, isolated.NoCgroups()))},
		{name: "host", run: startTrue(b, hostexec.New())},
	}
	for b.Loop() {
		for i := range runs {
			began := time.Now()
			if err := runs[i].run(); err != nil {
				b.Fatal(runs[i].name, err)
			}
			runs[i].took += time.Since(began)
		}
	}
	ms := func(i int) float64 { return float64(runs[i].took.Microseconds()) / 1000 / float64(b.N) }
	for i, r := range runs {
		b.ReportMetric(ms(i), r.name+"-ms/start")
	}
	b.ReportMetric(ms(1)/ms(0), "cgroups/bwrap")
	b.ReportMetric(ms(2)/ms(0), "rlimits/bwrap")
	b.ReportMetric(ms(1)-ms(3), "cgroups-host-ms")
	b.ReportMetric(ms(2)-ms(3), "rlimits-host-ms")
	b.ReportMetric(0, "ns/op")
}

// startTrue returns a function that runs true with e and checks its exit.
func startTrue(b *testing.B, e local.Executor) func() error {
	dir := b.TempDir()
	return func() error {
		p, err := e.Start(b.Context(), &local.Cmd{Name: "true", Cwd: "/vercel/sandbox", Dir: dir, HostCwd: dir})
		if err != nil {
			return err
		}
		if code, err := p.Wait(); err != nil || code != 0 {
			return fmt.Errorf("exit %d: %v", code, err)
		}
		return nil
	}
}

// bareBwrap is the command line of bwrap running true with the
// namespaces, session and mounts of a minimal sandbox, and nothing else.
func bareBwrap(b *testing.B) []string {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("SKIPPED: bubblewrap is not installed")
	}
	args := []string{bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"}
	for _, d := range []string{"/bin", "/lib", "/lib64", "/sbin"} {
		if target, err := os.Readlink(d); err == nil {
			args = append(args, "--symlink", target, d)
		}
	}
	return append(args, "--", "/usr/bin/true")
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
				if _, err := sb.Command("true").Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
