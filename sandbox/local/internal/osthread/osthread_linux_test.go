package osthread

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

// onMain runs f on a goroutine locked to the main thread: the test
// binary's main goroutine holds it, so f asks it for the thread.
func onMain(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	mainCalls <- func() { defer close(done); f() }
	<-done
}

// mainCalls are run by the main goroutine, on the main thread (TestMain).
var mainCalls = make(chan func())

func TestMain(m *testing.M) {
	runtime.LockOSThread()
	code := make(chan int)
	go func() { code <- m.Run() }()
	for {
		select {
		case f := <-mainCalls:
			f()
		case c := <-code:
			if err := goleak.Find(); c == 0 && err != nil {
				fmt.Fprintln(os.Stderr, err)
				c = 1
			}
			os.Exit(c)
		}
	}
}

func TestRunFromTheMainThreadRunsElsewhere(t *testing.T) {
	onMain(t, func() {
		assert.True(t, Main(), "the test runs on the main thread")
		var tid int
		Run(func() bool { tid = syscall.Gettid(); return false })
		assert.NotEqual(t, os.Getpid(), tid, "f ran on another thread")
		assert.True(t, Main(), "the caller is still on the main thread")
	})
}

func TestRunElsewhereRunsHere(t *testing.T) {
	done := make(chan struct{})
	Go(func() {
		defer close(done)
		here := syscall.Gettid()
		var tid int
		Run(func() bool { tid = syscall.Gettid(); return false })
		assert.Equal(t, here, tid, "f ran on the calling thread")
	})
	<-done
}

func TestGoFromTheMainThreadLocksAnother(t *testing.T) {
	onMain(t, func() {
		tids := make(chan int)
		Go(func() { tids <- syscall.Gettid() })
		assert.NotEqual(t, os.Getpid(), <-tids)
	})
}

// TestRunKeepEndsTheThread: a thread kept locked ends with its goroutine,
// and never the main one.
func TestRunKeepEndsTheThread(t *testing.T) {
	onMain(t, func() {
		tids := make(chan int, 1)
		Run(func() bool { tids <- syscall.Gettid(); return true })
		tid := <-tids
		assert.NotEqual(t, os.Getpid(), tid)
		assert.Eventually(t, func() bool {
			_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
			return os.IsNotExist(err)
		}, 5*time.Second, 10*time.Millisecond, "the kept thread ended with its goroutine")
	})
}
