//go:build !linux

package local

import (
	"io"
	"os"
)

// copyData copies in to out and returns the bytes it copied.
func copyData(out, in *os.File, _ int64) (int64, error) { return io.Copy(out, in) }
