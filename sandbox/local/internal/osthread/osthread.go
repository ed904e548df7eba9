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

import (
	"os"
	"runtime"
	"syscall"
)

// Main reports whether the calling goroutine runs on the main thread. The
// answer holds only while the goroutine is locked to its thread.
func Main() bool { return syscall.Gettid() == os.Getpid() }

// Go runs f on a new goroutine locked to a thread that is not the main
// thread. f starts with the thread locked once; it may unlock it, or
// return without, and the runtime then ends the thread with the goroutine.
func Go(f func()) {
	go func() {
		runtime.LockOSThread()
		if !Main() {
			f()
			return
		}
		// This goroutine holds the main thread until the new one has
		// locked its own, which therefore is another.
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			f()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// Run calls f with the calling goroutine locked to a thread that is not the
// main thread, and reports what f reports: on the calling thread where that
// is another, else on a new goroutine, whose thread ends with it. keep
// tells whether the thread is to stay locked (its goroutine then ends with
// it): where f ran on the calling thread, the caller's goroutine stays
// locked, and the thread ends when it exits.
func Run(f func() (keep bool)) {
	runtime.LockOSThread()
	if !Main() {
		if !f() {
			runtime.UnlockOSThread()
		}
		return
	}
	done := make(chan struct{})
	Go(func() {
		defer close(done)
		if !f() {
			runtime.UnlockOSThread()
		}
	})
	<-done
	runtime.UnlockOSThread()
}
