//go:build !linux

package isolated

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// StartTTY implements local.TTYExecutor; it always fails on this system.
func (e *Executor) StartTTY(context.Context, *local.Cmd, int, int) (local.TTYProcess, error) {
	return nil, errNotLinux()
}
