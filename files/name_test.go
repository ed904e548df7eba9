package files

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

const cwd = "/vercel/sandbox"

func TestEntryName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cwd, p, want string
	}{
		// The examples of the wire protocol.
		{cwd, "hello.txt", "vercel/sandbox/hello.txt"},
		{cwd, "/etc/app.conf", "etc/app.conf"},
		{cwd, "a/../b", "vercel/sandbox/b"},
		{cwd, "../x", "vercel/x"},
		// Edge cases.
		{cwd, "./a//b/./c", "vercel/sandbox/a/b/c"},
		{cwd, "../../../../x", "x"},
		{cwd, "//etc///passwd", "etc/passwd"},
		{cwd, "/../../etc", "etc"},
		{cwd, "données/日本語.txt", "vercel/sandbox/données/日本語.txt"},
		{cwd, `a\b`, `vercel/sandbox/a\b`}, // a backslash is an ordinary character
		{cwd, " spaced name ", "vercel/sandbox/ spaced name "},
		{"/", "x", "x"},
		{"/home/ubuntu/", "x", "home/ubuntu/x"},
		{"/a/./b/../c", "x", "a/c/x"},
		{"", "/abs", "abs"},         // cwd is not needed for absolute paths
		{"relative", "/abs", "abs"}, // nor checked
		{cwd, "...", "vercel/sandbox/..."},
		{cwd, "..a", "vercel/sandbox/..a"},
	}
	for _, tt := range tests {
		got, err := archiveName(tt.cwd, tt.p)
		if assert.NoError(t, err, "cwd %q path %q", tt.cwd, tt.p) {
			assert.Equal(t, tt.want, got, "cwd %q path %q", tt.cwd, tt.p)
		}
	}
}

func TestEntryNameErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cwd, p, field string
	}{
		{cwd, "", "path"},
		{cwd, "a\x00b", "path"},
		{cwd, "/", "path"},
		{cwd, "//", "path"},
		{cwd, "/..", "path"},
		{cwd, "../../..", "path"},
		{"/", ".", "path"},
		// A file path names a file: "dir/" once wrote a file named dir.
		{cwd, "dir/", "path"},
		{cwd, "dir/.", "path"},
		{cwd, "/a/b/..", "path"},
		{cwd, "..", "path"},
		{"", "rel", "cwd"},
		{"vercel/sandbox", "rel", "cwd"},
		{"/a\x00", "rel", "cwd"},
		// Every other call sends a path as JSON, which carries invalid
		// UTF-8 as U+FFFD: no call could name such a file again.
		{cwd, "u/\xffx", "path"},
		{cwd, "/abs/\xc3", "path"},
		{"/\xff", "rel", "cwd"},
	}
	for _, tt := range tests {
		_, err := archiveName(tt.cwd, tt.p)
		require.Error(t, err, "cwd %q path %q", tt.cwd, tt.p)
		assert.ErrorIs(t, err, apierr.ErrInvalidInput)
		var ie *apierr.InputError
		if assert.True(t, errors.As(err, &ie)) {
			assert.Equal(t, tt.field, ie.Field, "cwd %q path %q: %v", tt.cwd, tt.p, err)
		}
	}
}

// checkName asserts the invariants of an archive entry name.
func checkName(t *testing.T, name string) {
	t.Helper()
	if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name {
		t.Fatalf("entry name %q is not clean and relative", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." || seg == "." || seg == "" {
			t.Fatalf("entry name %q has segment %q", name, seg)
		}
	}
}

func FuzzEntryName(f *testing.F) {
	for _, s := range [][2]string{
		{cwd, "hello.txt"}, {cwd, "/etc/app.conf"}, {cwd, "a/../b"}, {cwd, "../x"},
		{cwd, "../../../.."}, {"/", "/"}, {"", "x"}, {"/a/../..", "./.."}, {cwd, "a/./b//c/"},
		{cwd, "\x00"}, {cwd, "/.../..../."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cwd, p string) {
		name, err := archiveName(cwd, p)
		if err != nil {
			var ie *apierr.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *apierr.InputError", err)
			}
			return
		}
		checkName(t, name)
		full := p
		if !path.IsAbs(p) {
			full = path.Join(cwd, p)
		}
		if want := path.Clean(full); "/"+name != want {
			t.Fatalf("archiveName(%q, %q) = %q, want %q", cwd, p, name, want[1:])
		}
	})
}
