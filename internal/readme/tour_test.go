package readme

import (
	"bytes"
	"context"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
)

// tourMarker is the line of README.md that comes right before the tour:
// the first ```go block after it is the tour, a complete program.
const tourMarker = "<!-- tour -->"

// tourClientCall is how the tour makes its client, exactly once, from the
// environment; the test names the local backend there, as a user would.
const tourClientCall = "sandbox.NewClient()"

// tourImports are the only packages of this module that the tour may
// import: its everyday part needs sandbox alone.
var tourImports = map[string]bool{
	"github.com/sbx-go/vercel-sandbox/sandbox": true,
}

// tourBlock returns the tour: the first ```go block after tourMarker.
func tourBlock(t *testing.T, readme string) string {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n"+tourMarker+"\n")
	if !ok {
		t.Fatalf("README.md has no line %q before its tour", tourMarker)
	}
	_, after, ok = strings.Cut(after, "```go\n")
	if !ok {
		t.Fatalf("README.md has no ```go block after %q", tourMarker)
	}
	src, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatal("the tour's ```go block in README.md does not end")
	}
	return src + "\n"
}

// TestTourCompilesAndRuns builds the README's tour as written and runs it
// against the embedded local backend (real processes, package hostexec),
// so that the README cannot drift from the API.
func TestTourCompilesAndRuns(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src := tourBlock(t, string(readme))

	f, err := parser.ParseFile(token.NewFileSet(), "tour.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("the tour does not parse: %v", err)
	}
	if f.Name.Name != "main" {
		t.Fatalf("the tour is package %s, want a complete program (package main)", f.Name.Name)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !tourImports[path] {
			t.Errorf("the tour imports %s; its everyday part must need the sandbox package only", path)
		}
	}
	if n := strings.Count(src, tourClientCall); n != 1 {
		t.Fatalf("the tour calls %s %d times, want once (the test points it at the local backend through the environment)", tourClientCall, n)
	}

	// Build the tour as a package of this module that exists only in an
	// overlay, so that it uses this very tree and nothing is written into it.
	dir, err := filepath.Abs("tour")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {
		filepath.Join(dir, "main.go"): write("main.go", src),
	}})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "tour")
	build := exec.Command("go", "build", "-overlay", write("overlay.json", string(overlay)), "-o", bin, "./tour")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the README's tour does not build: %v\n%s\n--- the tour as built:\n%s", err, out, src)
	}

	srv, _, err := local.Listen(context.Background(), local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin)
	// The tour as written, with the server named by the environment and
	// no credentials but these.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VERCEL_") {
			run.Env = append(run.Env, kv)
		}
	}
	run.Env = append(run.Env,
		"HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(),
		"VERCEL_SANDBOX_BASE_URL="+srv.URL(),
		"VERCEL_TOKEN="+srv.Token(), "VERCEL_TEAM_ID=team_tour", "VERCEL_PROJECT_ID=prj_tour",
	)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("the README's tour failed: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("the tour printed:\n%s", &stdout)
	if stdout.Len() == 0 {
		t.Error("the tour printed nothing")
	}
	if len(srv.Sandboxes()) == 0 {
		t.Error("the tour created no sandbox")
	}
	if leaked := srv.LeakedSandboxes(); len(leaked) > 0 {
		t.Errorf("the tour left sandboxes running (it must stop them): %v", leaked)
	}
}
