package readme

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// internalAliases are the exported aliases of internal types that remain.
// The list only shrinks; it is empty.
var internalAliases = map[string]bool{}

// Every exported name of the client packages can be used by a program
// outside the module: no exported function, method or field names an
// internal type, which no such program could make or read the
// documentation of with go doc.
func TestExportedAPINamesNoInternalType(t *testing.T) {
	t.Parallel()
	for _, pkg := range clientPackages {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			checkNoInternalType(t, pkg)
		})
	}
}

func checkNoInternalType(t *testing.T, pkg string) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join("..", "..", filepath.FromSlash(pkg), "*.go"))
	require.NoError(t, err)
	var checked int
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		internal := map[string]bool{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, "/internal/") {
				name := path[strings.LastIndex(path, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				internal[name] = true
			}
		}
		uses := func(where string, n ast.Node) {
			if internalAliases[path.Base(pkg)+"."+where] {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						t.Errorf("%s: %s names internal type %s.%s", fset.Position(n.Pos()), where, id.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				checked++
				uses(d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					checked++
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						uses(ts.Name.Name, ts.Type)
						continue
					}
					for _, fld := range st.Fields.List {
						for _, n := range fld.Names {
							if n.IsExported() {
								uses(ts.Name.Name+"."+n.Name, fld.Type)
							}
						}
					}
				}
			}
		}
	}
	assert.Greater(t, checked, 5, "the package's exported names were read")
}

func exportedRecv(r *ast.FieldList) bool {
	typ := r.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
