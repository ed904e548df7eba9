// Package isolate is the glue between the isolated executor
// (sandbox/local/isolated, its only importer) and bubblewrap, the engine
// that isolates each command: bwrap creates the namespaces (user, mount,
// PID, network, UTS, IPC, cgroup), builds the root filesystem, starts the
// command in a new session without a controlling terminal (or, for a
// command on a terminal, in the session of that terminal), drops every
// capability, sets no-new-privileges and kills the whole sandbox when its
// parent dies.
//
// This package does what bwrap does not: the layout of the sandbox's
// filesystem (which host paths appear where, generated /etc files, one
// copy of the host's files of /etc for all sandboxes), the resource limits
// (rlimits, and the control groups of package cgroup, in force before the
// command starts, so the command and all it starts inherit them), a seccomp filter that keeps files from becoming setuid or
// setgid, the network policy (loopback only, or the host's network, whose
// abstract unix sockets a Landlock domain keeps out of reach), and
// the shell's lookup of the command with its exit codes 126 and 127. Where
// the server runs as root, an Engine's sandboxes can also have several
// users and their own writable /etc (EnableUsers).
package isolate

import (
	"errors"
)

// ErrUnavailable reports that isolation cannot be used on this system.
var ErrUnavailable = errors.New("isolation unavailable")

// ErrNoScope reports that sandboxes with the host's network reach the
// host's abstract unix sockets (see Engine.SocketScope).
var ErrNoScope = errors.New("isolate: the host's abstract unix sockets are reachable with the host's network")

// DefaultUID and DefaultGID are the ids of the unprivileged user that
// commands run as when they are not run with sudo.
const (
	DefaultUID  = 1000
	DefaultGID  = 1000
	DefaultUser = "vercel-sandbox"
)

// Mount is a host path made visible at Path inside the sandbox.
type Mount struct {
	Host string
	Path string
}

// Account is a user of the sandbox: its user and primary group ids.
type Account struct {
	UID, GID int
}

// Rlimit is one resource limit (a syscall.RLIMIT_* resource).
type Rlimit struct {
	Resource int
	Cur      uint64
	Max      uint64
}

// Spec describes one isolated command.
type Spec struct {
	// Path is the command to execute, a sandbox path (see LookPath); Args
	// follow it in argv, whose first element is Name.
	Name string
	Path string
	Args []string
	Env  []string
	// Cwd is the working directory, a sandbox path.
	Cwd string
	// Root runs the command as uid 0 inside the sandbox; otherwise it runs
	// as DefaultUID. Without the Engine's users (EnableUsers) either has no
	// capability; with them root holds a few (see EnableUsers).
	Root bool
	// As, when not nil, runs the command as this account; it needs the
	// Engine's users and overrides Root.
	As *Account
	// Etc, when not empty, is the host directory of the sandbox's own
	// /etc, shown writable at /etc when the Engine has users; the host's
	// files of /etc that programs need appear in it as symbolic links.
	Etc string
	// Hostname is the sandbox's host name.
	Hostname string
	// Writable lists host directories mounted read-write.
	Writable []Mount
	// ReadOnly lists extra host paths mounted read-only.
	ReadOnly []Mount
	// Rlimits bind the sandbox's processes.
	Rlimits []Rlimit
	// Network gives the sandbox the host's network; otherwise it has its
	// own network namespace with only a loopback interface.
	Network bool
}

// systemDirs are mounted read-only from the host (or recreated as the same
// symbolic links).
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}
