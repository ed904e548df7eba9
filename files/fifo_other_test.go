//go:build !unix

package files

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are not supported on this system") }
