package sandboxtest

import (
	"fmt"
	"strings"
	"testing"
)

// CheckLeaks makes the test fail when it ends if the code under test left
// a sandbox running: one neither stopped, deleted nor ended by its timeout.
// The check (AssertNoLeakedSandboxes) runs after the cleanups the test
// registers from now on and before the server closes.
func (s *Server) CheckLeaks() {
	s.t.Cleanup(func() { s.AssertNoLeakedSandboxes(s.t) })
}

// AssertNoLeakedSandboxes fails t, listing each one, when a sandbox still
// has a running session although it was neither stopped nor deleted. Call
// it at the end of a test (or use CheckLeaks): on the real service such a
// sandbox keeps running, and costing, until its timeout. It uses Errorf,
// so the test's remaining cleanups still run.
func (s *Server) AssertNoLeakedSandboxes(t testing.TB) {
	t.Helper()
	leaks := s.LeakedSandboxes()
	if len(leaks) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sandboxtest: %d sandbox(es) left running (neither stopped nor deleted):", len(leaks))
	for _, l := range leaks {
		b.WriteString("\n\t")
		b.WriteString(l.String())
	}
	t.Errorf("%s", b.String())
}
