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
