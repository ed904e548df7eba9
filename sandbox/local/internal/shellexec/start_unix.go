//go:build unix

package shellexec

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// StartFailure maps the error of an exec of name to the shell's exit code
// and message, for the failures a shell reports that way; ok is false for
// any other failure.
func StartFailure(name string, err error) (code int, msg string, ok bool) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NotFound, name + ": No such file or directory\n", true
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ETXTBSY):
		return NotExecutable, fmt.Sprintf("%s: cannot execute: %s\n", name, ErrText(err)), true
	}
	return 0, "", false
}
