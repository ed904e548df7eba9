//go:build !unix

package hostexec

import (
	"context"
	"errors"
	"runtime"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

const localSupported = false

var errLocalUnsupported = errors.New("hostexec: Executor is not supported on " + runtime.GOOS)

func startLocal(context.Context, localStart) (local.Process, error) {
	return nil, errLocalUnsupported
}
