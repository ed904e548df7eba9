package sandbox

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// dirFS is the fs.FS view of FileSystem.DirFS. It keeps the listings it
// has made, each the whole tree below one directory, and answers from
// them what they cover.
type dirFS struct {
	ctx  context.Context
	fsys *FileSystem
	dir  string

	mu    sync.Mutex
	trees map[string]*tree // by the view name of their root
}

var (
	_ fs.StatFS     = (*dirFS)(nil)
	_ fs.ReadDirFS  = (*dirFS)(nil)
	_ fs.ReadFileFS = (*dirFS)(nil)
	_ fs.ReadLinkFS = (*dirFS)(nil)
)

// tree is one listing: every entry below its root, by view name, and the
// entries of each directory sorted by name. Symbolic links are not
// followed, so nothing below a link is in it.
type tree struct {
	root    string
	info    map[string]*fileInfo
	entries map[string][]fs.DirEntry
}

// full maps an fs.FS name to a sandbox path.
func (f *dirFS) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if err := checkPath("dir", f.dir); err != nil {
		return "", err
	}
	if err := f.ctx.Err(); err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	return path.Join(f.dir, name), nil
}

// named reports err against the fs.FS name, as the fs.FS contract asks.
func named(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// list runs find once for the tree below name and keeps the listing.
func (f *dirFS) list(name, p string) (*tree, error) {
	recs, err := f.fsys.ops().find(f.ctx, "readdir", p, "-H", -1)
	if err != nil {
		return nil, err
	}
	t := &tree{root: name, info: make(map[string]*fileInfo, len(recs)), entries: map[string][]fs.DirEntry{}}
	for _, r := range recs {
		n := name
		if r.rel != "" {
			n = path.Join(name, r.rel)
		}
		t.info[n] = r.info
		if r.rel != "" {
			dir := path.Dir(n)
			t.entries[dir] = append(t.entries[dir], dirEntry{r.info})
		}
	}
	for _, list := range t.entries {
		slices.SortFunc(list, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	}
	f.mu.Lock()
	if f.trees == nil {
		f.trees = map[string]*tree{}
	}
	f.trees[name] = t
	f.mu.Unlock()
	return t, nil
}

// lookup answers from the listings what they say of name, without
// following a final symbolic link: its info, or an error when the
// listings show it cannot exist. ok is false when no listing covers name
// (nothing listed above it, or a symbolic link on the way). The root of a
// listing other than "." was reached by following links, so it answers
// only for Stat (follow).
func (f *dirFS) lookup(name string, follow bool) (fi *fileInfo, t *tree, ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for anc := name; ; anc = path.Dir(anc) {
		t := f.trees[anc]
		if t != nil && (anc != name || name == "." || follow) {
			if fi, ok, err := t.find(name); ok {
				return fi, t, true, err
			}
		}
		if anc == "." {
			return nil, nil, false, nil
		}
	}
}

// find looks name up in a listing whose root is name or above it.
func (t *tree) find(name string) (*fileInfo, bool, error) {
	if fi := t.info[name]; fi != nil {
		return fi, true, nil
	}
	// The first element missing on the way from the root tells why.
	rel := name
	if t.root != "." {
		rel = strings.TrimPrefix(name, t.root+"/")
	}
	at := t.root
	for elem := range strings.SplitSeq(rel, "/") {
		parent := t.info[at]
		if at == "." {
			at = elem
		} else {
			at += "/" + elem
		}
		if t.info[at] != nil {
			continue
		}
		switch {
		case parent.mode.Type() == fs.ModeSymlink:
			return nil, false, nil
		case !parent.IsDir():
			return nil, true, syscall.ENOTDIR
		}
		return nil, true, syscall.ENOENT
	}
	return nil, false, nil
}

// stat is Stat (follow) and Lstat. The root, ".", is listed whole.
func (f *dirFS) stat(op, name string, follow bool) (*fileInfo, error) {
	p, err := f.full(op, name)
	if err != nil {
		return nil, err
	}
	fi, _, ok, err := f.lookup(name, follow)
	switch {
	case ok && err != nil:
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	case ok && (!follow || fi.mode.Type() != fs.ModeSymlink):
		return fi, nil
	case !ok && name == ".":
		t, err := f.list(name, p)
		if err != nil {
			return nil, named(op, name, err)
		}
		return t.info[name], nil
	}
	info, err := f.fsys.ops().stat(f.ctx, op, p, follow)
	if err != nil {
		return nil, named(op, name, err)
	}
	return info.(*fileInfo), nil
}

// Stat implements fs.StatFS: it follows symbolic links. The listing
// answers for anything it covers but a link, which runs find.
func (f *dirFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := f.stat("stat", name, true)
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// Lstat implements fs.ReadLinkFS: it does not follow a final link.
func (f *dirFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := f.stat("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// ReadLink implements fs.ReadLinkFS. It returns the link's target as it
// is stored, which may be absolute or lead out of the view.
func (f *dirFS) ReadLink(name string) (string, error) {
	fi, err := f.stat("readlink", name, false)
	if err != nil {
		return "", err
	}
	if fi.mode.Type() != fs.ModeSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EINVAL}
	}
	return fi.stat.LinkTarget, nil
}

// ReadDir implements fs.ReadDirFS. A directory that no listing covers is
// listed with everything below it, in one command.
func (f *dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.full("readdir", name)
	if err != nil {
		return nil, err
	}
	fi, t, ok, err := f.lookup(name, true)
	switch {
	case ok && err != nil:
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	case ok && fi.IsDir():
		return slices.Clone(t.entries[name]), nil
	case ok && fi.mode.Type() != fs.ModeSymlink:
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	t, err = f.list(name, p)
	if err != nil {
		return nil, named("readdir", name, err)
	}
	if !t.info[name].IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	return slices.Clone(t.entries[name]), nil
}

// ReadFile implements fs.ReadFileFS.
func (f *dirFS) ReadFile(name string) ([]byte, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, named("readfile", name, err)
	}
	defer file.Close()
	fi, _ := file.Stat()
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: syscall.EISDIR}
	}
	data := make([]byte, 0, max(fi.Size(), 0)+1)
	for {
		n, err := file.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, named("readfile", name, err)
		}
		if len(data) == cap(data) {
			data = slices.Grow(data, 512)
		}
	}
}

// Open implements fs.FS. A file's content is streamed as it is read; a
// directory's entries come from the listing.
func (f *dirFS) Open(name string) (fs.File, error) {
	fi, err := f.stat("open", name, true)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return &openDir{fsys: f, name: name, info: fi}, nil
	}
	p, _ := f.full("open", name)
	var rc io.ReadCloser
	if f.fsys.user != nil {
		rc, err = f.fsys.user.open(f.ctx, p)
	} else {
		rc, _, err = f.fsys.sb.open(f.ctx, p)
	}
	if err != nil {
		return nil, named("open", name, err)
	}
	return &openFile{rc: rc, name: name, info: fi}, nil
}

// openFile is a file of the view open for reading.
type openFile struct {
	rc   io.ReadCloser
	name string
	info fs.FileInfo
}

func (o *openFile) Stat() (fs.FileInfo, error) { return o.info, nil }
func (o *openFile) Close() error               { return o.rc.Close() }

func (o *openFile) Read(b []byte) (int, error) {
	n, err := o.rc.Read(b)
	if err != nil && err != io.EOF {
		err = named("read", o.name, err)
	}
	return n, err
}

type openDir struct {
	fsys    *dirFS
	name    string
	info    fs.FileInfo
	entries []fs.DirEntry
	listed  bool
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: syscall.EISDIR}
}

// ReadDir implements fs.ReadDirFile.
func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.listed {
		list, err := d.fsys.ReadDir(d.name)
		if err != nil {
			return nil, err
		}
		d.entries, d.listed = list, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n:n]
	d.entries = d.entries[n:]
	return out, nil
}
