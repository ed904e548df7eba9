// Package osthread runs work on an operating system thread of its own that
// is not the process's main thread.
//
// The local executors move a thread into a sandbox's control group for the
// moment of a start (cgroup v1), and put the thread that forks sandboxes in
// a Landlock domain for good. Neither may be the main thread: the Go
// runtime never ends it (a goroutine that exits locked to it parks it for
// good instead), and on cgroup v1 the memory of the whole process is
// charged to the memory control group of its main thread, the thread
// group's leader, so a server whose main thread sat in a sandbox's group
// would be charged to that sandbox, up to its limit.
package osthread
