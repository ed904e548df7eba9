package sandbox

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/sbx-go/vercel-sandbox/internal/observe"
)

// The telemetry of package otelsandbox reaches a client through
// observe.WithObserver, so that this package exports no observer type and
// a program that does not import otelsandbox links no telemetry package.
func init() {
	observe.WithObserver = func(obs observe.Observer) Option {
		return func(c *config) { c.obs = obs }
	}
}

// start begins an operation of the client's observer, if it has one.
func (c *Client) start(ctx context.Context, name string, attrs ...slog.Attr) (context.Context, *observe.Op) {
	return observe.Start(ctx, c.core.Observer(), name, attrs...)
}

// endSandbox ends op, which made or found sb.
func endSandbox(op *observe.Op, sb *Sandbox, err error) {
	if op == nil {
		return
	}
	if sb != nil {
		op.Set(slog.String(observe.KeySandbox, sb.name), slog.String(observe.KeySession, sb.SessionID()))
	}
	op.End(err)
}

// endStop ends op, the stop that gave res.
func endStop(op *observe.Op, res *StopResult, err error) {
	if op == nil {
		return
	}
	if res != nil {
		op.Set(slog.String(observe.KeySession, res.Session.ID), slog.Bool(observe.KeyAlready, res.AlreadyStopped))
	}
	op.End(err)
}

// observedFile counts what is read of a file opened for an operation, and
// ends the operation when it is closed.
type observedFile struct {
	io.ReadCloser
	op   *observe.Op
	n    int64
	once sync.Once
}

func (f *observedFile) Read(b []byte) (int, error) {
	n, err := f.ReadCloser.Read(b)
	f.n += int64(n)
	return n, err
}

func (f *observedFile) Close() error {
	err := f.ReadCloser.Close()
	f.once.Do(func() {
		f.op.Set(slog.Int(observe.KeyFiles, 1), slog.Int64(observe.KeyBytes, f.n))
		f.op.End(err)
	})
	return err
}
