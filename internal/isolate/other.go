//go:build !linux

package isolate

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

var errOS = fmt.Errorf("%w: Linux namespaces are not available on %s", ErrUnavailable, runtime.GOOS)

// Engine is unavailable.
type Engine struct{}

// NewEngine fails: isolation needs Linux.
func NewEngine() (*Engine, error) { return nil, errOS }

// Options are the host's side of a sandbox.
type Options struct {
	Cgroup         *Cgroup
	Stdout, Stderr *os.File
	TTY            *os.File
}

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

// Cgroups is unavailable.
type Cgroups struct{}

// Cgroup is unavailable.
type Cgroup struct{}

// FindCgroups fails: control groups need Linux.
func FindCgroups() (*Cgroups, error) { return nil, errOS }

// Memory reports false.
func (c *Cgroups) Memory() bool { return false }

// Pids reports false.
func (c *Cgroups) Pids() bool { return false }

// String describes the cgroups in use.
func (c *Cgroups) String() string { return "none" }

// New fails.
func (c *Cgroups) New(int64, int64) (*Cgroup, error) { return nil, errOS }

// OOMKilled reports false.
func (g *Cgroup) OOMKilled() bool { return false }

// Remove does nothing.
func (g *Cgroup) Remove() {}

// Release does nothing.
func (g *Cgroup) Release() {}

// Close does nothing.
func (c *Cgroups) Close() {}
