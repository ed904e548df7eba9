package isolate

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/shellexec"
)

// LookPath resolves spec.Name as a shell in the sandbox would, with the
// PATH pathEnv and spec.Cwd, and sets spec.Path to the result. It looks at
// the host paths behind the sandbox's mounts, never following a symbolic
// link of the sandbox's tree out of it. On failure it returns the shell's
// exit code (126 or 127) and message.
func (spec *Spec) LookPath(pathEnv string) (code int, msg string) {
	p, code, msg := shellexec.LookPathFunc(spec.Name, pathEnv, spec.Cwd, spec.stat)
	spec.Path = p
	return code, msg
}

// stat stats the sandbox path p through the mounts that back it.
func (spec *Spec) stat(p string) (fs.FileInfo, error) {
	p = path.Clean("/" + filepath.ToSlash(p))
	for _, m := range spec.Writable {
		if rel, ok := under(p, m.Path); ok {
			root, err := os.OpenRoot(m.Host)
			if err != nil {
				return nil, err
			}
			defer root.Close()
			fi, err := root.Stat(filepath.FromSlash(rel))
			if err != nil && !errors.Is(err, fs.ErrPermission) {
				// A link out of the tree leads, in the sandbox, to a
				// path that does not exist there.
				err = &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
			}
			return fi, err
		}
	}
	for _, m := range spec.ReadOnly {
		if rel, ok := under(p, m.Path); ok {
			return os.Stat(filepath.Join(m.Host, filepath.FromSlash(rel)))
		}
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	for _, d := range systemDirs {
		if top == d {
			return os.Stat(p)
		}
	}
	return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
}

// under reports whether p is dir or lies under it, and the rest of p.
func under(p, dir string) (string, bool) {
	dir = path.Clean("/" + dir)
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), true
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return rest, ok && rest != ""
}
