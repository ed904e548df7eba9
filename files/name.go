package files

import (
	"path"
	"strconv"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// archiveName returns the archive entry name of the sandbox path p, as the
// official SDK computes it for fs/write (whose extraction directory is "/"):
// a relative p is joined onto cwd, the session's absolute working directory;
// an absolute p is cleaned ("//", "." and ".." collapsed); the result is made
// relative to "/", so it never starts with "/".
//
// With cwd "/vercel/sandbox": "hello.txt" → "vercel/sandbox/hello.txt",
// "/etc/app.conf" → "etc/app.conf", "a/../b" → "vercel/sandbox/b",
// "../x" → "vercel/x".
//
// Paths use POSIX rules on every platform. cwd is only consulted when p is
// relative. An empty p, a NUL byte, invalid UTF-8, a relative p with a cwd
// that is not absolute, and a path that resolves to "/" itself are refused
// with an *sandbox.InputError (errors.Is(err, sandbox.ErrInvalidInput)), and
// so is a path that names a directory: one that ends in "/", "/." or "/..",
// or is "." or "..".
//
// A tar entry name is bytes, and could hold invalid UTF-8; it is refused
// all the same, by the rule of every other path (wire.TextFault): the
// calls that read, list or remove a file send its path as JSON text, so
// none of them could name such a file again.
func archiveName(cwd, p string) (string, error) {
	name, field, reason := entryName(cwd, p)
	if reason != "" {
		return "", apierr.Invalid(field, "%s", reason)
	}
	return name, nil
}

// entryName implements archiveName; on failure it returns the field at fault
// ("path" or "cwd") and the reason.
func entryName(cwd, p string) (name, field, reason string) {
	if p == "" {
		return "", "path", "empty path"
	}
	if r := wire.TextFault(p); r != "" {
		return "", "path", "path " + r
	}
	if base := p[strings.LastIndexByte(p, '/')+1:]; base == "" || base == "." || base == ".." {
		return "", "path", "path " + quote(p) + " names a directory, not a file"
	}
	full := p
	if !path.IsAbs(p) {
		switch {
		case cwd == "":
			return "", "cwd", "relative path " + quote(p) + " needs the session's working directory"
		case wire.TextFault(cwd) != "":
			return "", "cwd", "working directory " + wire.TextFault(cwd)
		case !path.IsAbs(cwd):
			return "", "cwd", "working directory " + quote(cwd) + " is not absolute"
		}
		full = path.Join(cwd, p)
	}
	full = path.Clean(full)
	if full == "/" {
		return "", "path", "path " + quote(p) + " resolves to the root directory"
	}
	return full[1:], "", ""
}

// quote quotes s for an error message, shortening very long values.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}
