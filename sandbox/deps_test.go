package sandbox_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A program that imports only sandbox links nothing of the local backend,
// the terminal client, the test kits or the examples, and the library's
// go.mod does not require what only those need.
func TestClientProgramLinksOnlyTheClient(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	dir := t.TempDir()
	prog := filepath.Join(dir, "main.go")
	src := "package main\n\nimport _ \"github.com/sbx-go/vercel-sandbox/sandbox\"\n\nfunc main() {}\n"
	if err := os.WriteFile(prog, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", prog).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, exitStderr(err))
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || !slices.Contains(deps, "github.com/sbx-go/vercel-sandbox/sandbox") {
		t.Fatalf("go list -deps of a program importing sandbox does not list sandbox:\n%s", out)
	}
	forbidden := []string{
		"github.com/creack/pty",
		"github.com/coder/websocket",
		"golang.org/x/term",
		"github.com/sbx-go/vercel-sandbox/sandbox/local",
		"github.com/sbx-go/vercel-sandbox/sandbox/pty",
		"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest",
		"github.com/sbx-go/vercel-sandbox/auth/authtest",
		"github.com/sbx-go/vercel-sandbox/examples",
		// Telemetry is package otelsandbox's: a client without it links
		// no OpenTelemetry package.
		"go.opentelemetry.io",
		"github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox",
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("a program importing only sandbox links %s", dep)
			}
		}
	}

	// The library's own go.mod, not the workspace's module graph.
	out, err = exec.Command(gobin, "mod", "edit", "-json", filepath.Join("..", "go.mod")).Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v\n%s", err, exitStderr(err))
	}
	var mod struct {
		Module  struct{ Path string }
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != "github.com/sbx-go/vercel-sandbox" {
		t.Fatalf("../go.mod is the module %q, not the library", mod.Module.Path)
	}
	for _, r := range mod.Require {
		if r.Path == "golang.org/x/term" {
			t.Errorf("the library's go.mod requires %s; only the examples need it", r.Path)
		}
	}
}

// exitStderr is what a failed go command wrote on its standard error.
func exitStderr(err error) []byte {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return nil
}
