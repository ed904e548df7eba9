// Package shellexec resolves and reports commands the way a POSIX shell
// does: the PATH lookup, exit code 127 for a command that cannot be found
// and 126 for one that cannot be executed, and the messages that go with
// them. Both local executors use it, on the host and inside the sandbox,
// so that a command fails the same way wherever it runs.
package shellexec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Exit codes a shell reports for a command it could not run.
const (
	NotExecutable = 126
	NotFound      = 127
)

// LookPath resolves name as a shell would, with the given PATH and working
// directory; relative names and relative PATH entries are resolved against
// dir. On failure it returns the shell's exit code (NotFound or
// NotExecutable) and its message, which ends with a newline.
func LookPath(name, pathEnv, dir string) (path string, code int, msg string) {
	return LookPathFunc(name, pathEnv, dir, os.Stat)
}

// LookPathFunc is LookPath with stat in place of os.Stat, for a lookup in
// a file system other than the host's, such as a sandbox's.
func LookPathFunc(name, pathEnv, dir string, stat func(string) (fs.FileInfo, error)) (path string, code int, msg string) {
	if name == "" {
		return "", NotFound, ": command not found\n"
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		fi, err := stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", NotFound, name + ": No such file or directory\n"
		case err != nil:
			return "", NotExecutable, name + ": " + ErrText(err) + "\n"
		case fi.IsDir():
			return "", NotExecutable, name + ": Is a directory\n"
		case fi.Mode()&0o111 == 0:
			return "", NotExecutable, name + ": Permission denied\n"
		}
		return p, 0, ""
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, 0, ""
		}
	}
	return "", NotFound, name + ": command not found\n"
}

// ErrText is the system's description of err, capitalised as a shell
// prints it, without the Go operation and path that *fs.PathError adds.
func ErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s != "" {
		s = strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}
