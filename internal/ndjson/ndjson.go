// Package ndjson reads newline-delimited JSON streams of any line length.
package ndjson

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Reader yields the lines of an NDJSON stream. Lines may be of any length:
// it grows its buffer as needed rather than failing on long lines. Blank
// lines are skipped. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

// ErrLineTooLong is returned when a line exceeds the configured maximum.
var ErrLineTooLong = errors.New("ndjson: line exceeds the maximum length")

// NewReader returns a Reader over r. maxLine bounds one line in bytes; zero
// or less means no bound.
func NewReader(r io.Reader, maxLine int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 8<<10), max: maxLine}
}

// Next returns the next non-blank line without its terminator. The slice is
// valid until the next call. At the end of the stream it returns io.EOF; a
// final line without a newline is returned as a line, and io.EOF comes with
// the following call. Other read errors are returned as they are.
func (r *Reader) Next() ([]byte, error) {
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

func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		if r.max > 0 && len(r.buf) > r.max {
			// Drain the rest of this line so the stream could continue, but
			// report the error; callers normally stop here.
			return nil, ErrLineTooLong
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
