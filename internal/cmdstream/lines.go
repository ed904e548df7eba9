package cmdstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader yields the lines of an NDJSON stream. Lines may be of any length:
// it grows its buffer as needed rather than failing on long lines. Blank
// lines are skipped. It is not safe for concurrent use.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

// errLineTooLong is returned when a line exceeds the configured maximum.
var errLineTooLong = errors.New("ndjson: line exceeds the maximum length")

// newLineReader returns a lineReader over r. maxLine bounds one line in bytes; zero
// or less means no bound.
func newLineReader(r io.Reader, maxLine int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 8<<10), max: maxLine}
}

// Next returns the next non-blank line without its terminator. The slice is
// valid until the next call. At the end of the stream it returns io.EOF; a
// final line without a newline is returned as a line, and io.EOF comes with
// the following call. Other read errors are returned as they are.
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
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		if r.max > 0 && len(r.buf) > r.max {
			// Drain the rest of this line so the stream could continue, but
			// report the error; callers normally stop here.
			return nil, errLineTooLong
		}
		switch err {
		case nil:
			return bytes.TrimRight(r.buf, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		default:
			return bytes.TrimRight(r.buf, "\r\n"), err
		}
	}
}
