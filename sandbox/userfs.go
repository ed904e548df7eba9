package sandbox

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
)

// writeFiles uploads entries through the file API, then gives them to the
// user; see FileSystem.WriteFiles.
func (u *User) writeFiles(ctx context.Context, entries []files.Entry, p files.WriteParams) error {
	if err := files.Validate(u.home, entries, p); err != nil || len(entries) == 0 {
		return err
	}
	abs := make([]files.Entry, len(entries))
	paths := make([]string, len(entries))
	for i, e := range entries {
		abs[i] = e.WithPath(u.resolve(e.Path()))
		paths[i] = abs[i].Path()
	}
	if err := u.sb.writeFiles(ctx, abs, p); err != nil {
		return err
	}
	primary, dflt, err := u.groups(ctx)
	if err != nil {
		return err
	}
	if err := u.asRoot(ctx, "chown", append([]string{u.name + ":" + primary, "--"}, paths...)...); err != nil {
		return err
	}
	dirs := u.dirsBelowHome(paths)
	if len(dirs) == 0 {
		return nil
	}
	if err := u.asRoot(ctx, "chown", append([]string{u.name + ":" + dflt, "--"}, dirs...)...); err != nil {
		return err
	}
	return u.asRoot(ctx, "chmod", append([]string{"770", "--"}, dirs...)...)
}

func (u *User) asRoot(ctx context.Context, name string, args ...string) error {
	_, err := u.sb.run(ctx, &command.Cmd{Name: name, Args: args, Sudo: true})
	return err
}

// dirsBelowHome returns the directories strictly between the home
// directory and each path.
func (u *User) dirsBelowHome(paths []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		for d := path.Dir(p); strings.HasPrefix(d, u.home+"/"); d = path.Dir(d) {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// open reads a file as the user, so the user's own permissions apply (the
// file API may not reach a file it keeps private): base64 runs as the
// user, as the official SDK does, and its output is decoded as it
// arrives. Closing the stream before its end stops the command.
func (u *User) open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := checkPath("name", name); err != nil {
		return nil, err
	}
	p := u.resolve(name)
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	started := make(chan struct{})
	r := &userFile{ReadCloser: pr, cancel: cancel, done: make(chan struct{})}
	go func() {
		stderr := &limitedBuffer{max: 64 << 10}
		// The first write means the file could be opened; a command that
		// fails before any output reports its error from open.
		w := &firstWrite{w: pw, first: started}
		_, err := u.run(ctx, &command.Cmd{Name: "base64", Args: []string{"--", p},
			Stdout: w, Stderr: stderr, CaptureLimit: -1})
		if err != nil {
			err = &fs.PathError{Op: "open", Path: name, Err: toolError(err, stderr.String())}
		}
		r.err = err
		pw.CloseWithError(err)
		close(r.done)
		w.once.Do(func() { close(started) })
	}()
	<-started
	select {
	case <-r.done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
	default:
	}
	return &decodedFile{Reader: base64.NewDecoder(base64.StdEncoding, pr), f: r}, nil
}

// userFile is the pipe of a base64 command; closing it stops the command.
type userFile struct {
	io.ReadCloser
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

type decodedFile struct {
	io.Reader
	f *userFile
}

func (d *decodedFile) Close() error {
	d.f.cancel()
	err := d.f.ReadCloser.Close()
	<-d.f.done
	return err
}

// firstWrite closes first on its first write.
type firstWrite struct {
	w     io.Writer
	first chan struct{}
	once  sync.Once
}

func (f *firstWrite) Write(b []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	return f.w.Write(b)
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
