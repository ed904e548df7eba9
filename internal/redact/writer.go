package redact

import (
	"bytes"
	"io"
	"sync"
)

// Writer is an io.WriteCloser that redacts what is written before passing
// it on. It holds back only what may still be the start of a secret (an
// end of the text that begins a known value, as it is or escaped, or a
// trailing token-shaped word of up to MaxTokenLen bytes) until the next
// write or Close, so secrets split across writes are redacted too, and
// output that cannot begin one is passed on at once. Close does not close
// the underlying writer. A Writer is safe for concurrent use; once warm,
// a write with no secret in it does not allocate.
type Writer struct {
	set     *Set
	w       io.Writer
	mu      sync.Mutex
	pending []byte
	out     []byte
	// cont: the last write ended inside a redacted token longer than the
	// hold window, so token characters that follow belong to it.
	cont   bool
	closed bool
	err    error
}

// NewWriter returns a Writer that passes to w what it is given, with the
// secrets of s hidden.
func NewWriter(w io.Writer, s *Set) *Writer {
	return &Writer{set: s, w: w}
}

// Write redacts p and passes on what is safe to pass on. It reports
// len(p) unless the underlying writer fails.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	w.pending = append(w.pending, p...)
	if err := w.flush(false); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what was held back. It does not close the underlying
// writer.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	return w.flush(true)
}

// Held reports how many bytes are held back, waiting for more input.
func (w *Writer) Held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

func (w *Writer) flush(final bool) error {
	b := w.pending
	if w.cont {
		i := 0
		for i < len(b) && tokenChar(b[i]) {
			i++
		}
		b = b[i:]
		if len(b) == 0 && !final {
			w.pending = w.pending[:0]
			return nil
		}
		w.cont = false
	}
	var vs views
	vs.decode(b)
	sp := w.set.find(&vs)
	e := len(b)
	if !final {
		e = w.holdStart(b, &vs)
		for _, s := range sp {
			if s.from < e && e < s.End {
				e = s.from
				break
			}
		}
		if limit := len(b) - max(MaxTokenLen, w.set.longest()); e < limit {
			// A token longer than the hold window: pass on everything
			// before the window, redacting the token through its end.
			e = limit
			for _, s := range sp {
				if s.Start < e && e < s.End {
					e = s.End
					w.cont = e == len(b)
					break
				}
			}
		}
	}
	keep := sp[:0:0]
	for _, s := range sp {
		if s.End <= e {
			keep = append(keep, s)
		}
	}
	w.out = replace(w.out[:0], b[:e], keep)
	w.pending = append(w.pending[:0], b[e:]...)
	if len(w.out) > 0 {
		if _, err := w.w.Write(w.out); err != nil {
			w.err = err
			return err
		}
	}
	return nil
}

// space reports the bytes that \s matches in a regexp.
func space(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// holdStart returns where the part of b that may still grow into a secret
// begins: the end that may begin a known value, escaped or not (see
// Set.openFrom), a trailing run of token characters (and backslashes, which
// may escape the next one) with a preceding "Bearer " (a token may be cut
// there), and a trailing word with a ':' not yet followed by '@' (a URL may
// be cut before the end of its password), at most MaxTokenLen bytes back.
func (w *Writer) holdStart(b []byte, vs *views) int {
	h := w.set.openFrom(vs)
	i := len(b)
	for i > 0 && (tokenChar(b[i-1]) || b[i-1] == '\\') {
		i--
	}
	j := i
	for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t') {
		j--
	}
	if j < i {
		k := j
		for k > 0 && ('a' <= b[k-1]|0x20 && b[k-1]|0x20 <= 'z') {
			k--
		}
		if word := b[k:j]; bytes.EqualFold(word, []byte("bearer")) || bytes.EqualFold(word, []byte("basic")) {
			i = k
		}
	}
	word := len(b)
	for word > 0 && !space(b[word-1]) && len(b)-word < MaxTokenLen {
		word--
	}
	if c := bytes.IndexByte(b[word:], ':'); c >= 0 && bytes.IndexByte(b[word+c:], '@') < 0 {
		i = min(i, word)
	}
	i = max(i, len(b)-MaxTokenLen)
	return min(h, i)
}
