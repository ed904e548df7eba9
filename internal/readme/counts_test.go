package readme

import (
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's count of exported names")

// clientPackages are the packages a program that talks to Vercel Sandbox
// imports, relative to the module's root.
var clientPackages = []string{"sandbox", "sandbox/sandboxerr", "command", "files", "auth", "auth/vercelcli"}

// countsPrefix starts the one line of README.md that gives the counts.
const countsPrefix = "The client packages export "

// exportedNames counts the names a package exports: its exported
// constants, variables, types and functions, and the exported methods of
// its exported types, in the files built for this platform.
func exportedNames(t *testing.T, dir string) int {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil || receiverExported(d.Recv.List[0].Type) {
					n++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							n++
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								n++
							}
						}
					}
				}
			}
		}
	}
	return n
}

func receiverExported(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// countsLine is the README's line for the present code.
func countsLine(t *testing.T) string {
	total := 0
	var parts []string
	for _, p := range clientPackages {
		n := exportedNames(t, filepath.Join("..", "..", filepath.FromSlash(p)))
		total += n
		parts = append(parts, fmt.Sprintf("`%s` %d", p, n))
	}
	return fmt.Sprintf("%s%d names: %s (exported constants, variables, types, functions and methods, counted by `go test ./internal/readme`).",
		countsPrefix, total, strings.Join(parts, ", "))
}

// TestReadmeCountsExportedNames checks the README's count of the client
// packages' exported names against the code. After an API change, run
// go test ./internal/readme -run Counts -update to rewrite it.
func TestReadmeCountsExportedNames(t *testing.T) {
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := countsLine(t)
	lines := strings.Split(string(b), "\n")
	found := -1
	for i, l := range lines {
		if strings.HasPrefix(l, countsPrefix) {
			if found >= 0 {
				t.Fatalf("README.md has two lines starting %q", countsPrefix)
			}
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("README.md has no line starting %q; its packages section should have:\n%s", countsPrefix, want)
	}
	if lines[found] == want {
		return
	}
	if *update {
		lines[found] = want
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("README.md updated:\n%s", want)
		return
	}
	t.Errorf("README.md's count of exported names is out of date (go test ./internal/readme -run Counts -update rewrites it):\n got: %s\nwant: %s", lines[found], want)
}
