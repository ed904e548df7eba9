//go:build !unix

package main

import (
	"os"

	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// keyboard returns in itself: without a poller for it, the session cannot
// interrupt its read, and Wait returns after the next key.
func keyboard(in *os.File) (*os.File, func(), error) { return in, func() {}, nil }

// followResize does nothing: there is no SIGWINCH.
func followResize(int, *pty.Session) func() { return func() {} }
