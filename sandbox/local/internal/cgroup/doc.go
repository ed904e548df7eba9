// Package cgroup gives the local executors' commands control groups of
// their own: memory and process limits for the isolated executor, and for
// any executor a group that every process a command starts is born in and
// cannot leave without privileges, so that ending the command ends them
// all (KillAll), daemons included. It uses the cgroup v2 directory this
// process is in, where the memory and pids controllers are delegated, or
// the cgroup v1 memory and pids hierarchies, where writable (as root).
package cgroup
