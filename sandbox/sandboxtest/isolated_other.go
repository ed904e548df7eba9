//go:build !linux

package sandboxtest

import (
	"context"
	"fmt"
	"runtime"
)

// NewIsolatedExecutor fails on this system: isolation needs Linux. The
// error wraps ErrIsolationUnavailable.
func NewIsolatedExecutor(opts ...IsolatedOption) (*IsolatedExecutor, error) {
	_ = newIsolated(opts) // the options are valid, isolation is not
	return nil, fmt.Errorf("%w: Linux namespaces are not available on %s", ErrIsolationUnavailable, runtime.GOOS)
}

// Start implements Executor; it always fails on this system.
func (e *IsolatedExecutor) Start(context.Context, *Cmd) (Process, error) {
	return nil, fmt.Errorf("%w: Linux namespaces are not available on %s", ErrIsolationUnavailable, runtime.GOOS)
}
