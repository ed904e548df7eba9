package cmdstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// readerSize is the size of the line reader's buffer. A line that fits in
// it is returned in place, without a copy; a longer one is gathered in a
// second buffer.
const readerSize = 64 << 10

// lineReader yields the lines of an NDJSON stream. Lines may be of any length:
// it grows its buffer as needed rather than failing on long lines. Blank
// lines are skipped. It is not safe for concurrent use.
type lineReader struct {
	br  *bufio.Reader
	buf []byte // the pieces of a line longer than br's buffer
	max int
}

// errLineTooLong is returned when a line exceeds the configured maximum.
var errLineTooLong = errors.New("ndjson: line exceeds the maximum length")

// newLineReader returns a lineReader over r. maxLine bounds one line in bytes; zero
// or less means no bound.
func newLineReader(r io.Reader, maxLine int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, readerSize), max: maxLine}
}

// Next returns the next non-blank line without its terminator. The slice is
// valid until the next call, and the caller may change its bytes. At the
// end of the stream it returns io.EOF; a final line without a newline is
// returned as a line, and io.EOF comes with the following call. Other read
// errors are returned as they are.
func (r *lineReader) Next() ([]byte, error) {
	for {
		line, err := r.readLine()
		if len(bytes.TrimSpace(line)) > 0 {
			if err == io.EOF {
				err = nil
			}
			return line, err
		}
		if err != nil {
			return nil, err
		}
	}
}

func (r *lineReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Longer than the reader's buffer: gather the pieces, as far as
		// the bound allows.
		r.buf = append(r.buf[:0], line...)
		for err == bufio.ErrBufferFull && (r.max <= 0 || len(r.buf) <= r.max) {
			line, err = r.br.ReadSlice('\n')
			r.buf = append(r.buf, line...)
		}
		line = r.buf
	}
	if r.max > 0 && len(line) > r.max {
		return nil, errLineTooLong
	}
	return trimEOL(line), err
}

// trimEOL removes the trailing run of '\r' and '\n' bytes from b.
func trimEOL(b []byte) []byte {
	n := len(b)
	for n > 0 && (b[n-1] == '\n' || b[n-1] == '\r') {
		n--
	}
	return b[:n]
}
