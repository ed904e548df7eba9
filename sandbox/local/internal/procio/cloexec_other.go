//go:build unix && !linux

package procio

// cloexecRange reports false: CloseInherited lists the descriptors.
func cloexecRange() bool { return false }
