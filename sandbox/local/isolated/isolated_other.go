//go:build !linux

package isolated

import (
	"context"
	"fmt"
	"runtime"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// New fails on this system: isolation needs Linux. The
// error wraps ErrUnavailable.
func New(opts ...Option) (*Executor, error) {
	_ = newIsolated(opts) // the options are valid, isolation is not
	return nil, fmt.Errorf("%w: Linux namespaces are not available on %s", ErrUnavailable, runtime.GOOS)
}

// Start implements Executor; it always fails on this system.
func (e *Executor) Start(context.Context, *local.Cmd) (local.Process, error) {
	return nil, fmt.Errorf("%w: Linux namespaces are not available on %s", ErrUnavailable, runtime.GOOS)
}
