package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// tssdkDir holds the pinned official TypeScript SDK and its scripts.
const tssdkDir = "sandboxtest/testdata/tssdk"

// TestOfficialTypeScriptSDKBenchmarks runs bench.mjs: the official
// TypeScript SDK on the paths of this package's benchmarks (attached run of
// true, attached log stream, uploads of 64 MiB of text and of random data,
// download of 64 MiB), against the same local API with the same scripted
// commands and data, the timed uploads discarded by the server as in
// BenchmarkWriteFiles. Its "BenchmarkTSSDK/…" lines go to standard output
// in the format of go test -bench. It needs node and `npm ci` in tssdkDir,
// and runs only with SANDBOX_TSSDK_BENCH=1.
func TestOfficialTypeScriptSDKBenchmarks(t *testing.T) {
	if os.Getenv("SANDBOX_TSSDK_BENCH") != "1" {
		t.Skip("set SANDBOX_TSSDK_BENCH=1 to benchmark the official TypeScript SDK (needs node and `npm ci` in " + tssdkDir + ")")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tssdkDir, "node_modules", "@vercel", "sandbox")); err != nil {
		t.Fatalf("the SDK is not installed (run `npm ci` in %s): %v", tssdkDir, err)
	}
	dir := t.TempDir()
	text, random := uploadData()
	textFile, randomFile := filepath.Join(dir, "text"), filepath.Join(dir, "random")
	for f, data := range map[string][]byte{textFile: text, randomFile: random} {
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("lines"), linesHandler())
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	srv, err := local.New(local.WithExecutor(script), local.WithTeam("team_conformance"), local.WithProject("prj_conformance"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	var received atomic.Int64
	ts := httptest.NewServer(uploadDiscarder(srv.Handler(), func(r *http.Request) bool { return r.Header.Get("X-Bench-Discard") == "1" }, &received))
	t.Cleanup(ts.Close)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "bench.mjs")
	cmd.Dir = tssdkDir
	cmd.Env = append(os.Environ(),
		"SANDBOXTEST_URL="+ts.URL,
		"SANDBOXTEST_TOKEN="+srv.Token(),
		"BENCH_TEXT="+textFile,
		"BENCH_RANDOM="+randomFile,
		"BENCH_LINES="+strconv.Itoa(benchLines),
	)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "Benchmark") {
			fmt.Println(line) // for benchstat, beside the Go benchmarks
		} else {
			t.Log(line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bench.mjs: %v", err)
	}
	if received.Load() == 0 {
		t.Error("no upload reached the server")
	}
}
