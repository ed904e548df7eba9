package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// SymlinkPolicy says what FromFS and FromDir do with symbolic links found in
// the tree. Whatever the policy, no content from outside the tree's root is
// ever uploaded.
type SymlinkPolicy int

const (
	// SkipSymlinks leaves symbolic links out (the default). The sandbox
	// does not get the link, nor what it points to.
	SkipSymlinks SymlinkPolicy = iota
	// FollowSymlinks uploads a link to a regular file as a regular file
	// with the target's content and mode, under the link's name, provided
	// the target resolves inside the root (every hop checked). A link that
	// escapes the root, is absolute, dangles or loops is an error. Links to
	// directories are skipped, which rules out cycles and duplicates.
	// FromFS needs an fs.FS that implements fs.ReadLinkFS to follow links.
	FollowSymlinks
	// RejectSymlinks makes any symbolic link in the tree an error.
	RejectSymlinks
)

// TreeParams configures FromFS and FromDir. The zero value skips symbolic
// links and keeps every file.
type TreeParams struct {
	// Symlinks is the policy for symbolic links (default SkipSymlinks).
	Symlinks SymlinkPolicy
	// Filter, when not nil, keeps only what it accepts. It gets the
	// slash-separated path relative to the root and the directory entry
	// (not followed if it is a link); rejecting a directory skips
	// everything beneath it. For example, to leave out version control
	// data:
	//
	//	files.TreeParams{Filter: func(rel string, d fs.DirEntry) bool { return d.Name() != ".git" }}
	Filter func(rel string, d fs.DirEntry) bool
}

// FromFS returns one entry per regular file under root in fsys, in lexical
// order, each uploaded to path.Join(dstDir, its path relative to root). An
// empty dstDir means the session's working directory. Modes come from the
// files (embed.FS reports 0o444; use Entry.WithMode to change them).
//
// Directories are implied by the files' paths: empty directories are not
// uploaded. Symbolic links follow the SymlinkPolicy (skipped by default).
// Other special files (devices, sockets, pipes) are skipped. Contents are
// read only when an archive is written, and the files are opened through
// fsys again at that time.
func FromFS(dstDir string, fsys fs.FS, root string, p TreeParams) ([]Entry, error) {
	if fsys == nil {
		return nil, apierr.Invalid("fsys", "nil file system")
	}
	if !fs.ValidPath(root) {
		return nil, apierr.Invalid("root", "%s is not a valid fs.FS path (slash-separated, unrooted, no . or .. elements)", quote(root))
	}
	src := fsSource{fsys: fsys, root: root}
	return walkTree(fsys, root, "root", dstDir, src, p)
}

// FromDir returns one entry per regular file under the local directory
// localDir, each uploaded to path.Join(dstDir, its path relative to
// localDir), like FromFS. Files are opened only when an archive is written,
// and always through an os.Root of localDir, so a link swapped in meanwhile
// cannot lead outside localDir either. Modes are the local files' permission
// bits (with setuid, setgid and sticky bits).
func FromDir(dstDir, localDir string, p TreeParams) ([]Entry, error) {
	if localDir == "" {
		return nil, apierr.Invalid("localDir", "empty path")
	}
	abs, err := filepath.Abs(localDir)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	defer root.Close()
	src := dirSource{root: root, dir: abs}
	return walkTree(root.FS(), ".", "localDir", dstDir, src, p)
}

// treeSource abstracts how FromFS and FromDir follow links and open files.
type treeSource interface {
	// follow resolves the link at name, confined to the root, and returns
	// the target's info and the name to open it by.
	follow(name string) (fs.FileInfo, string, error)
	// opener returns the function that opens name when the archive is
	// written.
	opener(name string) func() (io.ReadCloser, error)
}

// errEscapes is the cause of a link that leads outside the root.
var errEscapes = errors.New("link target is outside the root")

func walkTree(fsys fs.FS, root, rootField, dstDir string, src treeSource, p TreeParams) ([]Entry, error) {
	if p.Symlinks < SkipSymlinks || p.Symlinks > RejectSymlinks {
		return nil, apierr.Invalid("Symlinks", "unknown policy %d", int(p.Symlinks))
	}
	st, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("files: %w", err)
	}
	if !st.IsDir() {
		return nil, apierr.Invalid(rootField, "%s is not a directory", quote(root))
	}
	var out []Entry
	err = fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == root {
			return nil
		}
		rel := name
		if root != "." {
			rel = strings.TrimPrefix(name, root+"/")
		}
		if p.Filter != nil && !p.Filter(rel, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		var (
			info     fs.FileInfo
			openName = name
		)
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			switch p.Symlinks {
			case SkipSymlinks:
				return nil
			case FollowSymlinks:
				info, openName, err = src.follow(name)
				if err != nil {
					return apierr.Invalid(rootField, "symbolic link %s: %v", quote(rel), err)
				}
				if info.IsDir() || !info.Mode().IsRegular() {
					return nil
				}
			default:
				return apierr.Invalid(rootField, "symbolic link %s found (RejectSymlinks)", quote(rel))
			}
		case t.IsRegular():
			info, err = d.Info()
			if err != nil {
				return err
			}
			if !info.Mode().IsRegular() { // replaced since the directory was read
				return nil
			}
		default:
			return nil // devices, sockets, pipes
		}
		out = append(out, Entry{
			path: path.Join(dstDir, rel),
			mode: sourceMode(info.Mode()),
			size: info.Size(),
			open: src.opener(openName),
		})
		return nil
	})
	if err != nil {
		var ie *apierr.InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, fmt.Errorf("files: %w", err)
	}
	return out, nil
}

// fsSource opens the files of an fs.FS.
type fsSource struct {
	fsys fs.FS
	root string
}

func (s fsSource) opener(name string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return openRegular(s.fsys.Open(name)) }
}

// maxHops bounds the links followed while resolving one path.
const maxHops = 40

// follow resolves name component by component, following each link with
// fs.ReadLink and refusing any step that leaves s.root.
func (s fsSource) follow(name string) (fs.FileInfo, string, error) {
	rel := name
	if s.root != "." {
		rel = strings.TrimPrefix(name, s.root+"/")
	}
	pending := strings.Split(rel, "/")
	cur := s.root // resolved so far: s.root or a path beneath it
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == s.root {
				return nil, "", errEscapes
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		info, err := fs.Lstat(s.fsys, next)
		if err != nil {
			return nil, "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > maxHops {
			return nil, "", errors.New("too many levels of symbolic links")
		}
		target, err := fs.ReadLink(s.fsys, next)
		if err != nil {
			return nil, "", err
		}
		if target == "" {
			return nil, "", errors.New("empty link target")
		}
		if strings.HasPrefix(target, "/") {
			return nil, "", errEscapes
		}
		// The target is relative to the link's directory, which is cur.
		pending = append(strings.Split(target, "/"), pending...)
	}
	info, err := fs.Stat(s.fsys, cur)
	if err != nil {
		return nil, "", err
	}
	return info, cur, nil
}

// dirSource opens the files of a local directory through os.Root.
type dirSource struct {
	root *os.Root // open while walking only
	dir  string   // absolute path of the directory
}

func (s dirSource) opener(name string) func() (io.ReadCloser, error) {
	dir, local := s.dir, filepath.FromSlash(name)
	return func() (io.ReadCloser, error) { return openRegular(os.OpenInRoot(dir, local)) }
}

// follow lets os.Root resolve the link: it refuses targets outside the root.
func (s dirSource) follow(name string) (fs.FileInfo, string, error) {
	info, err := s.root.Stat(filepath.FromSlash(name))
	if err != nil {
		return nil, "", err
	}
	return info, name, nil
}
