//go:build !unix

package procio

// CloseInherited does nothing on this system.
func CloseInherited() {}
