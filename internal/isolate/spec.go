// Package isolate runs a command in its own Linux namespaces (user, mount,
// PID, network, UTS and IPC) with a private root filesystem and resource
// limits, without requiring root on the host.
//
// The parent re-executes its own binary (/proc/self/exe) with a marker in the
// environment. The package's init function recognises the marker before the
// packages that import this one initialise, becomes the namespace's init
// process (PID 1), builds the root filesystem, starts the command in a
// nested user namespace (as uid 0 for sudo, else as an unprivileged uid) and
// exits with the command's status, which ends every process of the PID
// namespace. The command is started through a second re-execution, the exec
// stage, which joins the control groups, applies the resource limits and
// executes the command: the limits and control groups bind the command and
// what it starts, never the init process. A program can use Start only if it
// imports this package; sandbox/local/isolated is its only importer.
package isolate

import (
	"errors"
	"fmt"
)

// ErrUnavailable reports that isolation cannot be used on this system.
var ErrUnavailable = errors.New("isolation unavailable")

// DefaultUID and DefaultGID are the ids of the unprivileged user that
// commands run as when they are not run with sudo.
const (
	DefaultUID  = 1000
	DefaultGID  = 1000
	DefaultUser = "vercel-sandbox"
)

// Mount is a host directory made visible at Path inside the sandbox.
type Mount struct {
	Host string `json:"host"`
	Path string `json:"path"`
}

// Rlimit is one resource limit (a syscall.RLIMIT_* resource).
type Rlimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Spec describes one isolated command.
type Spec struct {
	// Name is the command as requested; Args follow it in argv. Name is
	// looked up in the PATH of Env inside the sandbox.
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	// Cwd is the working directory, a sandbox path.
	Cwd string `json:"cwd"`
	// Root runs the command as uid 0 inside the sandbox; otherwise it runs
	// as DefaultUID.
	Root bool `json:"root,omitempty"`
	// Hostname is the sandbox's host name.
	Hostname string `json:"hostname,omitempty"`
	// Writable lists host directories mounted read-write.
	Writable []Mount `json:"writable,omitempty"`
	// ReadOnly lists extra host paths mounted read-only.
	ReadOnly []Mount `json:"readOnly,omitempty"`
	// Rlimits are applied to the command, and so inherited by every
	// process it starts; the init process is not bound by them.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// Loopback brings up the loopback interface; set it when the sandbox
	// has its own network namespace.
	Loopback bool `json:"loopback,omitempty"`
}

// StartError reports a command that could not be started, as a shell
// reports it: an exit code (127 not found, 126 not executable) and a
// message for standard error.
type StartError struct {
	Code    int
	Message string
}

func (e *StartError) Error() string {
	return fmt.Sprintf("isolate: exit %d: %s", e.Code, e.Message)
}
