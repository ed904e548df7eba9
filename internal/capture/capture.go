// Package capture keeps the first bytes of a stream up to a limit and
// counts the rest.
package capture

// Buffer keeps up to Limit bytes and counts every byte written. It never
// fails. It is not safe for concurrent use.
type Buffer struct {
	Limit     int // negative: keep nothing
	buf       []byte
	total     int64
	truncated bool
}

// New returns a Buffer with the given limit.
func New(limit int) *Buffer { return &Buffer{Limit: limit} }

// Write keeps what fits under the limit and reports len(p).
func (b *Buffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	if b.Limit < 0 {
		if len(p) > 0 {
			b.truncated = true
		}
		return len(p), nil
	}
	room := b.Limit - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		b.truncated = true
	}
	return len(p), nil
}

// Bytes returns the kept bytes.
func (b *Buffer) Bytes() []byte { return b.buf }

// Total returns how many bytes were written.
func (b *Buffer) Total() int64 { return b.total }

// Truncated reports whether bytes were dropped.
func (b *Buffer) Truncated() bool { return b.truncated }
