package guard_test

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/command/guard"
)

const fuzzWS = "/vercel/sandbox/repo"

// insideOracle decides confinement with filepath.Rel, independently of the
// package's own prefix test.
func insideOracle(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

func resolveOracle(base, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Clean(base + "/" + p)
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// FuzzConfine checks that neither Confine nor Check ever accepts a path
// that cleans to outside the workspace.
func FuzzConfine(f *testing.F) {
	for _, s := range [][2]string{
		{"", "../x"}, {"", "a/../../b"}, {"sub", "../../x"}, {"sub", "../x"},
		{"", fuzzWS + "/../x"}, {"", fuzzWS + "2"}, {"", "--out=/etc/x"}, {"", "-I/usr"},
		{"", "./..."}, {"", "~"}, {"/", "x"}, {"..", "x"}, {"", "a:/etc"}, {"", "x=../../y"},
		{"", "file:///etc"}, {"", "/tmp/../etc"}, {"", "//etc"}, {"", "/vercel/sandbox/repo/./../repo/x"},
	} {
		f.Add(s[0], s[1])
	}
	p := guard.Policy{Workspace: fuzzWS, Allow: []guard.Rule{guard.Allow("go", "vet", "...")}, AllowPaths: []string{"/tmp"}}
	f.Fuzz(func(t *testing.T, dir, arg string) {
		// Confine: one path.
		if got, err := guard.Confine(fuzzWS, dir, arg); err == nil {
			d := fuzzWS
			if dir != "" {
				d = resolveOracle(fuzzWS, dir)
			}
			want := resolveOracle(d, arg)
			if !insideOracle(fuzzWS, d) || !insideOracle(fuzzWS, want) || got != want || strings.HasPrefix(arg, "~") {
				t.Fatalf("Confine(%q, %q) = %q, accepted; oracle resolves it to %q", dir, arg, got, want)
			}
		}

		// Check: an argument and the values it carries.
		err := p.Check(&command.Cmd{Name: "go", Args: []string{"vet", arg}, Dir: dir})
		if err != nil {
			return
		}
		d := fuzzWS
		if dir != "" {
			d = resolveOracle(fuzzWS, dir)
		}
		if !insideOracle(fuzzWS, d) {
			t.Fatalf("dir %q accepted, resolves to %s", dir, d)
		}
		var vals []string
		if !strings.HasPrefix(arg, "-") {
			vals = append(vals, arg)
		}
		if i := strings.IndexByte(arg, '='); i >= 0 {
			vals = append(vals, arg[i+1:])
		}
		for _, v := range vals {
			if schemeRE.MatchString(v) && !strings.HasPrefix(strings.ToLower(v), "file://") {
				continue
			}
			if strings.HasPrefix(v, "~") {
				t.Fatalf("home path %q accepted", v)
			}
			r := resolveOracle(d, v)
			if !insideOracle(fuzzWS, r) && !insideOracle("/tmp", r) {
				t.Fatalf("argument %q (value %q) accepted with dir %q, resolves to %s", arg, v, dir, r)
			}
		}
	})
}
