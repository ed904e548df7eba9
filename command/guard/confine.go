package guard

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// PathError reports a path that leaves the workspace.
type PathError struct {
	Path      string // as given
	Resolved  string // absolute and cleaned
	Workspace string
}

// Error implements error.
func (e *PathError) Error() string {
	if e.Resolved == "" {
		return fmt.Sprintf("%q is outside the workspace %s", e.Path, e.Workspace)
	}
	return fmt.Sprintf("%q resolves to %s, outside the workspace %s", e.Path, e.Resolved, e.Workspace)
}

// within reports whether the clean absolute path p is dir or below it.
func within(dir, p string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// Confine resolves name against dir (itself resolved against workspace
// when relative) and returns the cleaned absolute path, or a *PathError
// when the result is outside workspace. workspace must be absolute. "~"
// paths name a home directory and are always outside. The check is
// lexical: symbolic links are not resolved.
func Confine(workspace, dir, name string) (string, error) {
	if !path.IsAbs(workspace) {
		return "", apierr.Invalid("workspace", "%q is not an absolute path", workspace)
	}
	c := &compiled{workspace: path.Clean(workspace)}
	d, err := c.dir(dir)
	if err != nil {
		return "", err
	}
	return c.confine(d, name)
}

// confine resolves p against the absolute, confined dir.
func (c *compiled) confine(dir, p string) (string, error) {
	if strings.HasPrefix(p, "~") {
		// ~ and ~user are home directories to the tools that expand them.
		return "", &PathError{Path: p, Workspace: c.workspace}
	}
	abs := p
	if !path.IsAbs(abs) {
		abs = path.Join(dir, p)
	}
	abs = path.Clean(abs)
	if within(c.workspace, abs) {
		return abs, nil
	}
	for _, a := range c.allowPaths {
		if within(a, abs) {
			return abs, nil
		}
	}
	return "", &PathError{Path: p, Resolved: abs, Workspace: c.workspace}
}

// confineArg checks every path an argument may name.
func (c *compiled) confineArg(dir, arg string) error {
	for _, cand := range pathCandidates(arg) {
		if _, err := c.confine(dir, cand); err != nil {
			return err
		}
	}
	return nil
}

// pathCandidates returns the parts of arg that may be used as paths: the
// argument itself unless it is an option, the value after each "=", the
// value glued to a short option (-I/usr/include), the items of ":" and ","
// separated lists, and the path of a file: URL. Other URLs are not paths.
func pathCandidates(arg string) []string {
	var vals []string
	if !strings.HasPrefix(arg, "-") {
		vals = append(vals, arg)
	} else if len(arg) > 2 && arg[1] != '-' {
		vals = append(vals, arg[2:])
	}
	for s := arg; ; {
		i := strings.IndexByte(s, '=')
		if i < 0 {
			break
		}
		s = s[i+1:]
		vals = append(vals, s)
	}
	var out []string
	var add func(v string, depth int)
	add = func(v string, depth int) {
		if v == "" {
			return
		}
		if depth == 0 && len(v) >= 7 && strings.EqualFold(v[:7], "file://") {
			// file:///p and file://host/p name the path /p.
			u := v[7:]
			if i := strings.IndexByte(u, '/'); i >= 0 {
				u = u[i:]
			}
			add(u, depth)
			return
		}
		if depth == 0 && urlScheme.MatchString(v) {
			return // a URL of another scheme: not a local path
		}
		out = append(out, v)
		if depth == 0 && strings.ContainsAny(v, ":,") {
			for _, part := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' }) {
				add(part, 1)
			}
		}
	}
	for _, v := range vals {
		add(v, 0)
	}
	return out
}
