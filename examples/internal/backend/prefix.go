package backend

import (
	"bytes"
	"io"
	"sync"
)

// Prefixed returns a writer that writes to w with prefix at the start of
// every line. Bytes pass through unchanged otherwise (a multi-byte
// character split across two writes stays intact), and each line's piece
// reaches w in a single Write together with its prefix. The writer is safe
// for concurrent use; concurrent writers should each write whole lines.
func Prefixed(w io.Writer, prefix string) io.Writer {
	return &prefixWriter{w: w, prefix: []byte(prefix), bol: true}
}

type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix []byte
	bol    bool // the next byte starts a line
	buf    []byte
}

// Write writes b, prefixing each line. On error, the count is that of the
// bytes of b that reached w.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(b) {
		piece := b[n:]
		if i := bytes.IndexByte(piece, '\n'); i >= 0 {
			piece = piece[:i+1]
		}
		p.buf = p.buf[:0]
		pre := 0
		if p.bol {
			p.buf = append(p.buf, p.prefix...)
			pre = len(p.prefix)
		}
		p.buf = append(p.buf, piece...)
		m, err := p.w.Write(p.buf)
		m = min(max(m, 0), len(p.buf))
		if err == nil && m < len(p.buf) {
			err = io.ErrShortWrite
		}
		if err != nil {
			if m > pre {
				n += m - pre
				p.bol = b[n-1] == '\n'
			}
			return n, err
		}
		n += len(piece)
		p.bol = piece[len(piece)-1] == '\n'
	}
	return n, nil
}
