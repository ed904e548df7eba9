//go:build !linux

package isolate

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/internal/cgroup"
)

var errOS = fmt.Errorf("%w: Linux namespaces are not available on %s", ErrUnavailable, runtime.GOOS)

// Engine is unavailable.
type Engine struct{}

// NewEngine fails: isolation needs Linux.
func NewEngine() (*Engine, error) { return nil, errOS }

// Options are the host's side of a sandbox.
type Options struct {
	Cgroup         *cgroup.Cgroup
	Stdout, Stderr *os.File
	TTY            *os.File
}

// SocketScope reports that nothing is scoped.
func (e *Engine) SocketScope() error { return fmt.Errorf("%w: %w", ErrNoScope, errOS) }

// Users reports false.
func (e *Engine) Users() bool { return false }

// Process is a running sandbox.
type Process struct{}

// Start fails: isolation needs Linux.
func (e *Engine) Start(*Spec, Options) (*Process, error) { return nil, errOS }

// Signal does nothing.
func (p *Process) Signal(syscall.Signal) error { return nil }

// Wait returns at once.
func (p *Process) Wait() (int, error) { return -1, errOS }

// Close does nothing.
func (e *Engine) Close() {}
