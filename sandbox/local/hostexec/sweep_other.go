//go:build unix && !linux

package hostexec

// sweep does nothing where /proc does not list the processes' environments:
// only the command's process group is killed.
func sweep(string) {}
