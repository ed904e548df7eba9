package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"syscall"
)

// DirFS returns a read-only fs.FS of the sandbox directory dir, so that
// fs.WalkDir, fs.Glob, template.ParseFS and the like work on a remote
// sandbox. It implements fs.StatFS, fs.ReadDirFS and fs.ReadFileFS; each
// call is one request (a command, or a file read).
//
// An fs.FS method takes no context, so the view carries ctx: every call
// made through it uses ctx, and once ctx is done every call fails with its
// error. Make a new view for each unit of work. Files are read whole when
// opened.
func (s *Sandbox) DirFS(ctx context.Context, dir string) fs.FS {
	return &dirFS{ctx: ctx, ops: s.fileOps(), dir: dir}
}

type dirFS struct {
	ctx context.Context
	ops fileOps
	dir string
}

var (
	_ fs.StatFS     = (*dirFS)(nil)
	_ fs.ReadDirFS  = (*dirFS)(nil)
	_ fs.ReadFileFS = (*dirFS)(nil)
)

// full maps an fs.FS name to a sandbox path.
func (f *dirFS) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if err := checkPath("dir", f.dir); err != nil {
		return "", err
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

// Stat implements fs.StatFS.
func (f *dirFS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.full("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := f.ops.stat(f.ctx, "stat", p, true)
	if err != nil {
		return nil, named("stat", name, err)
	}
	return fi, nil
}

// ReadDir implements fs.ReadDirFS.
func (f *dirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.full("readdir", name)
	if err != nil {
		return nil, err
	}
	list, err := f.ops.readDir(f.ctx, p)
	if err != nil {
		return nil, named("readdir", name, err)
	}
	return list, nil
}

// ReadFile implements fs.ReadFileFS.
func (f *dirFS) ReadFile(name string) ([]byte, error) {
	p, err := f.full("readfile", name)
	if err != nil {
		return nil, err
	}
	data, err := f.ops.read(f.ctx, p)
	if err != nil {
		return nil, named("readfile", name, err)
	}
	return data, nil
}

// Open implements fs.FS. A directory's entries are listed on its first
// ReadDir; a file is read whole.
func (f *dirFS) Open(name string) (fs.File, error) {
	fi, err := f.Stat(name)
	if err != nil {
		return nil, named("open", name, err)
	}
	if fi.IsDir() {
		return &openDir{fsys: f, name: name, info: fi}, nil
	}
	data, err := f.ReadFile(name)
	if err != nil {
		return nil, named("open", name, err)
	}
	return &openFile{Reader: bytes.NewReader(data), info: fi}, nil
}

type openFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (o *openFile) Stat() (fs.FileInfo, error) { return o.info, nil }
func (o *openFile) Close() error               { return nil }

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
