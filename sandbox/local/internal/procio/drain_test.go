//go:build linux

package procio

import (
	"bytes"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// gatedWriter collects what it is given; its first Write waits until gate
// is closed, as a pump that the scheduler leaves waiting on a loaded
// machine.
type gatedWriter struct {
	gate chan struct{}
	once sync.Once
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.gate })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestDrainKeepsOutputLeftInThePipe: a command has exited and its output
// waits in the pipe, but the pump has not read it within the delay. Drain
// must not close the pipe on it: every byte arrives. (It closed the pipe
// after the delay whatever it held, and a loaded server answered commands
// with exit code 0 and no output.)
func TestDrainKeepsOutputLeftInThePipe(t *testing.T) {
	const delay = 20 * time.Millisecond
	outR, outW, errR, errW, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), 3<<10) // 48 KiB: more than one read of the pump
	if _, err := outW.Write(want); err != nil {
		t.Fatal(err)
	}
	outW.Close() // the command has exited
	errW.Close()

	w := &gatedWriter{gate: make(chan struct{})}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go Pump(outR, w, outDone)
	go Pump(errR, io.Discard, errDone)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		Drain(outR, errR, outDone, errDone, delay)
	}()
	time.Sleep(5 * delay) // the delay has passed, the pump still waits
	close(w.gate)
	<-drained
	if got := w.buf.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("%d of %d bytes arrived", len(got), len(want))
	}
}

// TestDrainGivesUpOnAnOpenEmptyPipe: a process outside the command's group
// holds the pipe open and writes nothing; Drain returns after the delay.
func TestDrainGivesUpOnAnOpenEmptyPipe(t *testing.T) {
	outR, outW, errR, errW, err := Pipes()
	if err != nil {
		t.Fatal(err)
	}
	defer outW.Close()
	defer errW.Close()
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go Pump(outR, io.Discard, outDone)
	go Pump(errR, io.Discard, errDone)
	Drain(outR, errR, outDone, errDone, 10*time.Millisecond)
	if _, err := outR.Read(make([]byte, 1)); err == nil || err == io.EOF {
		t.Fatalf("read after Drain: %v, want the error of a closed file", err)
	}
}

// TestPumpCopiesEverything: output of every size arrives whole and in
// order, across the growth of the pump's buffer.
func TestPumpCopiesEverything(t *testing.T) {
	for _, size := range []int{0, 1, pumpStart - 1, pumpStart, pumpStart + 1, 3 * pumpBuffer, 1 << 20} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		want := make([]byte, size)
		for i := range want {
			want[i] = byte(i % 251)
		}
		go func() {
			_, _ = w.Write(want)
			w.Close()
		}()
		var got bytes.Buffer
		done := make(chan struct{})
		Pump(r, &got, done)
		<-done
		r.Close()
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%d bytes: %d arrived, or not in order", size, got.Len())
		}
	}
}
