//go:build !unix

package sandboxtest

import (
	"context"
	"errors"
	"runtime"
)

const localSupported = false

var errLocalUnsupported = errors.New("sandboxtest: LocalExecutor is not supported on " + runtime.GOOS)

func startLocal(context.Context, localStart) (Process, error) {
	return nil, errLocalUnsupported
}
