//go:build !linux

package cgroup

import (
	"errors"
	"runtime"
	"syscall"
)

var errOS = errors.New("control groups need Linux, not " + runtime.GOOS)

// Cgroups is unavailable.
type Cgroups struct{}

// Cgroup is unavailable.
type Cgroup struct{}

// Find fails: control groups need Linux.
func Find() (*Cgroups, error) { return nil, errOS }

// Memory reports false.
func (c *Cgroups) Memory() bool { return false }

// Pids reports false.
func (c *Cgroups) Pids() bool { return false }

// String describes the cgroups in use.
func (c *Cgroups) String() string { return "none" }

// New fails.
func (c *Cgroups) New(int64, int64) (*Cgroup, error) { return nil, errOS }

// StartIn calls start.
func (g *Cgroup) StartIn(start func(into func(*syscall.SysProcAttr)) error) (bool, error) {
	return false, start(func(*syscall.SysProcAttr) {})
}

// Add fails.
func (g *Cgroup) Add(int) error { return errOS }

// KillAll does nothing.
func (g *Cgroup) KillAll() {}

// OOMKilled reports false.
func (g *Cgroup) OOMKilled() bool { return false }

// Remove does nothing.
func (g *Cgroup) Remove() {}

// Release does nothing.
func (g *Cgroup) Release() {}

// Close does nothing.
func (c *Cgroups) Close() {}
