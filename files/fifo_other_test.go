//go:build !unix

package files

func mkfifo(string) error { return errNoFIFO }
