package local

import (
	"container/list"
	"context"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Stream names of output frames.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
)

// defaultOutputLimit is how much output (in frameCost units) the server
// keeps per command for replay by the logs endpoint.
const defaultOutputLimit = 64 << 20

// maxBatch bounds how many frames a follower copies at a time.
const maxBatch = 256

// outFrame is one chunk of command output, as it will appear in a
// {"stream":…,"data":…} line.
type outFrame struct {
	stream string
	data   string
}

// outputLog keeps the output of one command for replay and lets any number
// of followers read it while it grows. Writers never wait for followers:
// appending wakes them by closing a channel, and each follower copies what
// it needs under the lock and writes to its client without it.
type outputLog struct {
	store *outputStore  // charged for what the log retains; nil in unit tests
	elem  *list.Element // in store.logs; guarded by store.mu

	mu       sync.Mutex
	frames   []outFrame
	first    int64 // sequence number of frames[0]
	size     int64 // cost of frames (see frameCost)
	limit    int64
	closed   bool
	wake     chan struct{} // closed and replaced on every change
	partial  [2][]byte     // incomplete UTF-8 tail per stream (stdout, stderr)
	readers  int           // followers reading now
	released bool          // the session stopped: drop the frames once no one reads

	droppedFrames int64
	droppedBytes  int64
	totalBytes    int64
}

func newOutputLog(limit int64) *outputLog {
	if limit <= 0 {
		limit = defaultOutputLimit
	}
	return &outputLog{limit: limit, wake: make(chan struct{})}
}

// writer returns the io.Writer for stream; each Write becomes one frame.
func (o *outputLog) writer(stream string) io.Writer {
	return &streamWriter{log: o, stream: stream}
}

type streamWriter struct {
	log    *outputLog
	stream string
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if err := w.log.append(w.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func streamIndex(stream string) int {
	if stream == streamStderr {
		return 1
	}
	return 0
}

// append adds p to stream. Bytes that end in the middle of a UTF-8 sequence
// are held back until the next write to the same stream; invalid bytes
// become U+FFFD.
func (o *outputLog) append(stream string, p []byte) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return io.ErrClosedPipe
	}
	if len(p) == 0 {
		o.mu.Unlock()
		return nil
	}
	var acct charges
	i := streamIndex(stream)
	buf := p
	if len(o.partial[i]) > 0 {
		buf = append(o.partial[i], p...)
		o.partial[i] = nil
	}
	cut := completePrefix(buf)
	if cut < len(buf) {
		o.partial[i] = append([]byte(nil), buf[cut:]...)
	}
	if cut > 0 {
		o.push(stream, validUTF8(buf[:cut]), &acct)
	}
	o.mu.Unlock()
	o.settle(acct)
	return nil
}

// charges is what one change of a log retained and evicted, to settle with
// the store once the log's lock is released.
type charges struct{ added, evicted int64 }

func (o *outputLog) settle(acct charges) {
	if o.store == nil {
		return
	}
	if acct.evicted > 0 {
		o.store.uncharge(acct.evicted, true)
	}
	if acct.added > 0 {
		o.store.charge(acct.added)
	}
}

// push stores one frame, evicts the oldest frames beyond the per-command
// limit and wakes followers. Called with o.mu held.
func (o *outputLog) push(stream, data string, acct *charges) {
	o.frames = append(o.frames, outFrame{stream: stream, data: data})
	o.size += frameCost(len(data))
	acct.added += frameCost(len(data))
	o.totalBytes += int64(len(data))
	for o.size > o.limit && len(o.frames) > 1 {
		acct.evicted += o.dropFirst()
	}
	o.signal()
}

// dropFirst drops the oldest frame and returns its cost. Called with o.mu
// held.
func (o *outputLog) dropFirst() int64 {
	n := len(o.frames[0].data)
	o.size -= frameCost(n)
	o.droppedBytes += int64(n)
	o.droppedFrames++
	o.frames[0] = outFrame{}
	o.frames = o.frames[1:]
	o.first++
	return frameCost(n)
}

// evictFront drops the oldest frames until need is freed or none is left,
// for the server-wide budget. It reports whether the log is complete and
// empty, so that the store may forget it. Called with the store's lock.
func (o *outputLog) evictFront(need int64) (spent bool) {
	o.mu.Lock()
	var freed int64
	for freed < need && len(o.frames) > 0 {
		freed += o.dropFirst()
	}
	if len(o.frames) == 0 {
		o.frames = nil // let the backing array go
	}
	spent = o.closed && len(o.frames) == 0
	o.mu.Unlock()
	o.store.uncharge(freed, true)
	return spent
}

// release marks the output as released with its session; the frames are
// dropped now, or when the last follower leaves.
func (o *outputLog) release() {
	o.mu.Lock()
	o.released = true
	cost := o.dropIfReleased()
	o.mu.Unlock()
	if cost > 0 && o.store != nil {
		o.store.uncharge(cost, false)
	}
}

// dropIfReleased drops every frame of a released log that no one reads and
// returns their cost. Called with o.mu held.
func (o *outputLog) dropIfReleased() int64 {
	if !o.released || o.readers > 0 || len(o.frames) == 0 {
		return 0
	}
	cost := o.size
	o.first += int64(len(o.frames))
	o.frames, o.size = nil, 0
	o.signal()
	return cost
}

// follow registers a follower, who must call unfollow when done. Once the
// output has been released no new follower may read it.
func (o *outputLog) follow() *evictedError {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released && o.first+int64(len(o.frames)) > 0 {
		return &evictedError{released: true, frames: o.first + int64(len(o.frames))}
	}
	o.readers++
	return nil
}

// unfollow ends what follow began.
func (o *outputLog) unfollow() {
	o.mu.Lock()
	o.readers--
	cost := o.dropIfReleased()
	o.mu.Unlock()
	if cost > 0 && o.store != nil {
		o.store.uncharge(cost, false)
	}
}

func (o *outputLog) signal() {
	close(o.wake)
	o.wake = make(chan struct{})
}

// close flushes held-back bytes (as U+FFFD) and marks the output complete.
func (o *outputLog) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	var acct charges
	for i, stream := range []string{streamStdout, streamStderr} {
		if len(o.partial[i]) > 0 {
			o.push(stream, validUTF8(o.partial[i]), &acct)
			o.partial[i] = nil
		}
	}
	o.closed = true
	o.signal()
	o.mu.Unlock()
	o.settle(acct)
}

// next returns frames from sequence number from on (at most maxBatch),
// waiting for some to arrive if there are none yet. done is true when the
// output is complete and every frame up to its end has been returned. A
// frame that is no longer held (evicted by a budget, or released) gives an
// *evictedError. It returns early with ctx's error, or when stop is closed
// and nothing new has arrived.
func (o *outputLog) next(ctx context.Context, stop <-chan struct{}, from int64) (frames []outFrame, nextFrom int64, done bool, err error) {
	for {
		o.mu.Lock()
		if from < o.first {
			err := &evictedError{released: o.released, frames: o.first - from}
			o.mu.Unlock()
			return nil, from, false, err
		}
		end := o.first + int64(len(o.frames))
		if from < end {
			stop := min(end, from+maxBatch)
			frames = append([]outFrame(nil), o.frames[from-o.first:stop-o.first]...)
			o.mu.Unlock()
			return frames, stop, false, nil
		}
		if o.closed {
			o.mu.Unlock()
			return nil, from, true, nil
		}
		wake := o.wake
		o.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, from, false, ctx.Err()
		case <-stop:
			// Output that completed at the same moment still gets out.
			select {
			case <-wake:
			default:
				return nil, from, false, context.Canceled
			}
		}
	}
}

// stats reports the retention counters.
func (o *outputLog) stats() (total, droppedFrames, droppedBytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.totalBytes, o.droppedFrames, o.droppedBytes
}

// text returns the retained output of one stream.
func (o *outputLog) text(stream string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, f := range o.frames {
		if f.stream == stream {
			b.WriteString(f.data)
		}
	}
	return b.String()
}

// completePrefix returns the length of the longest prefix of b that does not
// end inside an incomplete (but so far valid) UTF-8 sequence.
func completePrefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// validUTF8 converts b to a string, replacing each invalid byte with U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	s.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			s.WriteRune(utf8.RuneError)
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}
