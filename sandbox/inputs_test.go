package sandbox_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// The input contract: every public entry point refuses a nil or malformed
// argument with an error that says which argument is wrong (a
// *sandbox.InputError, or the package's documented typed error), before
// any request leaves, and never panics. A nil context is the exception: it
// is a programmer error, as everywhere in Go (see the context package), and
// is not checked.
//
// TestInputContractCoversThePublicAPI walks the exported functions and
// methods of the public packages from their source, so that an entry point
// added without a row in inputCases (or a reason in noInput) fails. The
// builders that return no error and no value with errors of its own panic
// at the call instead (atCallPanics).

// inputCase is one malformed input to one entry point.
type inputCase struct {
	entry string // "pkg.Func" or "pkg.Type.Method"
	field string // what the *InputError's Field must contain; "" with is
	is    error  // a package's own typed error, for errors.Is
	call  func(f *inputFixture) error
}

// publicPackages are the directories (from this one) whose exported
// functions and methods are the public API, by package name.
var publicPackages = map[string]string{
	"sandbox":     ".",
	"command":     "../command",
	"files":       "../files",
	"proxy":       "proxy",
	"pty":         "pty",
	"workload":    "workload",
	"guard":       "../command/guard",
	"auth":        "../auth",
	"vercelcli":   "../auth/vercelcli",
	"local":       "local",
	"fault":       "local/fault",
	"sandboxtest": "sandboxtest",
}

// standardMethods implement standard interfaces and take no input.
var standardMethods = map[string]bool{
	"Error": true, "Unwrap": true, "Is": true, "As": true, "String": true, "GoString": true,
	"LogValue": true, "Format": true, "MarshalJSON": true, "MarshalText": true,
}

// entryPoints lists the exported functions and methods (of exported
// types) of the package in dir, as "pkg.Func" and "pkg.Type.Method".
func entryPoints(t *testing.T, pkg, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || !fd.Name.IsExported() {
				continue
			}
			if fd.Recv == nil {
				out = append(out, pkg+"."+fd.Name.Name)
				continue
			}
			recv := receiverName(fd.Recv.List[0].Type)
			if ast.IsExported(recv) && !standardMethods[fd.Name.Name] {
				out = append(out, pkg+"."+recv+"."+fd.Name.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func receiverName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverName(x.X)
	case *ast.IndexExpr:
		return receiverName(x.X)
	case *ast.IndexListExpr:
		return receiverName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func TestInputContractCoversThePublicAPI(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range inputCases() {
		covered[c.entry] = true
	}
	var missing []string
	known := map[string]bool{}
	for pkg, dir := range publicPackages {
		_, err := os.Stat(dir)
		require.NoError(t, err, "package %s moved: update publicPackages", pkg)
		for _, e := range entryPoints(t, pkg, dir) {
			known[e] = true
			if !covered[e] && noInput[e] == "" && atCallPanics[e].call == nil {
				missing = append(missing, e)
			}
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "entry points without a malformed-input case in inputCases or a reason in noInput")
	for e := range covered {
		assert.True(t, known[e], "inputCases names %s, which is not an exported entry point", e)
	}
	for e := range noInput {
		assert.True(t, known[e], "noInput names %s, which is not an exported entry point", e)
		assert.False(t, covered[e], "%s is both in inputCases and noInput", e)
	}
	for e := range atCallPanics {
		assert.True(t, known[e], "atCallPanics names %s, which is not an exported entry point", e)
	}
}

func TestInputContract(t *testing.T) {
	t.Parallel()
	f := newInputFixture(t)
	for i, c := range inputCases() {
		t.Run(fmt.Sprintf("%s#%d", c.entry, i), func(t *testing.T) {
			before := len(f.env.srv.Requests())
			err := callNoPanic(t, f, c.call)
			require.Error(t, err, "a malformed input is refused")
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			} else {
				var ie *sandbox.InputError
				require.ErrorAs(t, err, &ie, "an *InputError, got %T: %v", err, err)
				assert.Contains(t, ie.Field, c.field, "the error names the argument: %v", err)
			}
			assert.Len(t, f.env.srv.Requests(), before, "refused before any request: %v", err)
		})
	}
}

// callNoPanic calls fn and turns a panic into a test failure.
func callNoPanic(t *testing.T, f *inputFixture, fn func(*inputFixture) error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("panic: %v", r)
		}
	}()
	return fn(f)
}

// errOf reports the error of an iterator's first element.
func errOf[T any](seq func(func(T, error) bool)) error {
	var err error
	for _, e := range seq {
		err = e
		break
	}
	if err == nil {
		return errors.New("the iterator yielded no error")
	}
	return err
}
