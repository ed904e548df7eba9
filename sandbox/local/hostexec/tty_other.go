//go:build !unix

package hostexec

import (
	"context"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

func startTTY(context.Context, localStart, int, int) (local.TTYProcess, error) {
	return nil, errLocalUnsupported
}
