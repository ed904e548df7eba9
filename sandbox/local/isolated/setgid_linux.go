package isolated

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// Setgid directories. The seccomp filter refuses the setgid bit to every
// file inside a sandbox, directories included, since it cannot tell them
// apart. A setgid directory grants nothing (files made in it take its
// group), and CreateGroup of package sandbox makes its shared directory
// with chmod 2770 as root. So a command that is exactly chmod, run as root,
// with an octal mode that adds setgid but not setuid to absolute paths of
// the sandbox's tree that are all directories, is done by the executor
// itself, on the host, through a descriptor of each directory opened
// without following links: it never reaches a file that is not one.

// chmodSetgid does cmd when it is such a chmod, and reports whether it
// did; the error is chmod's message.
func chmodSetgid(cmd *local.Cmd) (done bool, msg string) {
	if cmd.Name != "chmod" || !cmd.Sudo || len(cmd.Args) < 2 {
		return false, ""
	}
	mode, err := strconv.ParseUint(cmd.Args[0], 8, 32)
	if err != nil || mode&^0o7777 != 0 || mode&syscall.S_ISGID == 0 || mode&syscall.S_ISUID != 0 {
		return false, ""
	}
	paths := cmd.Args[1:]
	if paths[0] == "--" {
		paths = paths[1:]
	}
	tree, err := os.OpenRoot(cmd.Dir)
	if err != nil {
		return false, ""
	}
	defer tree.Close()
	var dirs []*os.File
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	for _, p := range paths {
		rel, ok := treePath(p)
		if !ok {
			return false, ""
		}
		d, err := tree.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return false, ""
		}
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return false, ""
	}
	for i, d := range dirs {
		if err := syscall.Fchmod(int(d.Fd()), uint32(mode)); err != nil {
			return true, "chmod: changing permissions of '" + paths[i] + "': " + err.Error() + "\n"
		}
	}
	return true, ""
}

// treePath returns the path, relative to the sandbox's tree, behind the
// absolute sandbox path p, when the tree backs it.
func treePath(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	rel := strings.TrimPrefix(path.Clean(p), "/")
	top, _, _ := strings.Cut(rel, "/")
	if rel == "" || reservedTop[top] {
		return "", false
	}
	return filepath.FromSlash(rel), true
}
