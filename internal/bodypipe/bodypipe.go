// Package bodypipe turns a function that writes a stream into a request
// body that produces it while it is read, in bounded memory.
package bodypipe

import (
	"context"
	"io"
	"sync"
)

// New returns a reader of what write writes. write runs in its own
// goroutine, started by the first Read, so a body that is never read costs
// nothing.
//
// When ctx ends, Read returns ctx.Err() and the goroutine stops. An error
// of write ends the stream with that error. Close stops the goroutine and
// waits for it to end (which it does as soon as a blocked write returns);
// it must be called when the reader is no longer used, after a complete
// read too. Read after Close returns io.ErrClosedPipe.
func New(ctx context.Context, write func(ctx context.Context, w io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	return &reader{ctx: ctx, write: write, pr: pr, pw: pw, done: make(chan struct{})}
}

type reader struct {
	ctx     context.Context
	write   func(context.Context, io.Writer) error
	pr      *io.PipeReader
	pw      *io.PipeWriter
	start   sync.Once
	started bool
	done    chan struct{}
}

func (r *reader) run() {
	defer close(r.done)
	// A cancelled ctx ends the stream at once, even while the writer is
	// blocked in the pipe waiting for a reader that no longer reads.
	stop := context.AfterFunc(r.ctx, func() { r.pw.CloseWithError(r.ctx.Err()) })
	err := r.write(r.ctx, r.pw)
	stop()
	_ = r.pw.CloseWithError(err) // nil closes with io.EOF
}

// Read implements io.Reader.
func (r *reader) Read(b []byte) (int, error) {
	r.start.Do(func() {
		r.started = true
		go r.run()
	})
	return r.pr.Read(b)
}

// Close implements io.Closer.
func (r *reader) Close() error {
	r.start.Do(func() {}) // no goroutine may start after Close
	_ = r.pr.Close()
	if r.started {
		<-r.done
	}
	return nil
}
