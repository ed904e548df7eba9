// Package cmdstream decodes the NDJSON streams of the command endpoints:
// the attached run (a started-command line, log lines, a finished-command
// line) and the log stream (log lines only).
//
// Memory stays bounded whatever the server sends. Lines are read through
// one buffer that starts small and grows up to maxBuffer. A log line longer
// than that is decoded as it arrives and its data handed out in pieces:
// several frames of the same stream, each valid until the next call. Data
// that arrives before its line names its stream (hosted Vercel writes
// "data" first) cannot be handed out yet: it waits in memory up to
// spoolMemory, beyond that in a temporary file. Every other part of a line
// (a key, the stream's name, an unknown member, a command or error line)
// must fit in the buffer, or the line is refused with code
// "frame_too_large".
package cmdstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Kind is the kind of a decoded frame.
type Kind int

// Frame kinds.
const (
	KindStdout Kind = iota + 1
	KindStderr
	KindCommand
)

// Frame is one decoded line, or one piece of the data of a long log line.
type Frame struct {
	Kind Kind
	// Data is the log data, for KindStdout and KindStderr. It is valid
	// until the next call to Next.
	Data    []byte
	Command *wire.Command // for KindCommand
}

// Buffer sizes.
const (
	// minBuffer is the buffer a decoder starts with: enough for an
	// attached run of a quiet command, the most common stream.
	minBuffer = 4 << 10
	// maxBuffer is what the buffer grows to while lines are longer, or
	// reads fill it: a log line longer than this is decoded in pieces.
	maxBuffer = 128 << 10
	// maxHeld bounds a line that is not a log line (a command line with
	// long arguments, say), which is decoded whole.
	maxHeld = 1 << 20
)

// Decoder reads frames. It is not safe for concurrent use.
type Decoder struct {
	r          io.Reader
	buf        []byte
	start, end int   // the unread bytes are buf[start:end]
	scanned    int   // buf[start:scanned] holds no newline
	rerr       error // how the body ended (io.EOF or a read error), once it has
	err        error // the error that ended decoding, returned again
	long       *longLine
	maxBuf     int // maxBuffer, smaller in tests
	maxHeld    int // maxHeld, smaller in tests

	secrets   *redact.Set
	sessionID string
	commandID string
}

// NewDecoder returns a decoder over an NDJSON body. Server text quoted in
// its errors goes through secrets (nil: token shapes only).
// Its first buffer comes from a pool, to which Close returns it.
func NewDecoder(body io.Reader, secrets *redact.Set, sessionID, commandID string) *Decoder {
	return &Decoder{r: body, buf: buffers.Get().(*[minBuffer]byte)[:], maxBuf: maxBuffer, maxHeld: maxHeld,
		secrets: secrets, sessionID: sessionID, commandID: commandID}
}

// buffers holds first buffers between decoders: most streams (an attached
// run of a quiet command, say) never need another, and a new one for each
// would be most of what a call allocates.
var buffers = sync.Pool{New: func() any { return new([minBuffer]byte) }}

// errClosed is what Next returns after Close.
var errClosed = errors.New("cmdstream: the decoder is closed")

// SetCommandID names the command in the errors that follow.
func (d *Decoder) SetCommandID(id string) { d.commandID = id }

// Next returns the next frame. A clean end of the body gives io.EOF; an
// error frame gives a *apierr.StreamError with its code; a read error gives
// a *apierr.StreamError that wraps it; a line that is not a valid frame
// gives a *apierr.StreamError with code "malformed_frame", or
// "frame_too_large" for a line whose parts other than log data do not fit
// in the decoder's bounds. Keys are matched exactly, as the wire protocol
// says, and a repeated key is refused.
func (d *Decoder) Next() (f Frame, err error) {
	f.Kind, f.Data, f.Command, err = d.NextParts()
	return f, err
}

// NextParts is Next with the frame in its parts, which the caller's loop
// can keep in registers: a Frame is too large for that, and a copy of one
// just returned waits for the stores that made it.
func (d *Decoder) NextParts() (Kind, []byte, *wire.Command, error) {
	// The common case first, in as few calls as can be: a whole log line
	// in the buffer. Anything else takes next, from the same line.
	if d.long == nil && d.err == nil {
		if k, data, n := hostedLog(d.buf[d.start:d.end]); k != 0 {
			d.start += n
			d.scanned = d.start // the line's newline was the first
			return k, data, nil, nil
		}
		if i := bytes.IndexByte(d.buf[d.scanned:d.end], '\n'); i >= 0 {
			end := d.scanned + i
			if k, data := fastLog(d.buf[d.start:end]); k != 0 {
				d.start, d.scanned = end+1, end+1
				return k, data, nil, nil
			}
		}
	}
	if d.err != nil {
		return 0, nil, nil, d.err
	}
	f, err := d.next()
	if err != nil {
		d.err = err
		d.Close()
	}
	return f.Kind, f.Data, f.Command, err
}

func (d *Decoder) next() (Frame, error) {
	if d.long != nil {
		return d.nextPiece()
	}
	for {
		if i := bytes.IndexByte(d.buf[d.scanned:d.end], '\n'); i >= 0 {
			line := d.buf[d.start : d.scanned+i]
			d.start = d.scanned + i + 1
			d.scanned = d.start
			if f, ok, err := d.line(line); ok || err != nil {
				return f, err
			}
			continue
		}
		d.scanned = d.end
		if d.rerr != nil {
			line := d.buf[d.start:d.end]
			d.start = d.end
			f, ok, err := d.line(line)
			if err != nil && d.rerr != io.EOF {
				// A read that failed inside the line cut it short: the
				// stream was cut, as cut says of a long line.
				return Frame{}, d.ended()
			}
			if ok || err != nil {
				return f, err
			}
			return Frame{}, d.ended()
		}
		if d.start == 0 && d.end == len(d.buf) { // a line longer than the buffer
			switch {
			case len(d.buf) >= d.maxBuf && logLine(d.buf):
				d.long = &longLine{}
				return d.nextPiece()
			case len(d.buf) >= d.maxHeld:
				return Frame{}, d.tooLarge("a line that is not a log line is longer than %d bytes", d.maxHeld)
			}
			d.grow(d.maxHeld)
		}
		d.fill()
	}
}

// line decodes a whole line; ok is false for a blank one.
func (d *Decoder) line(line []byte) (f Frame, ok bool, err error) {
	if k, data := fastLog(line); k != 0 { // it takes the spaces around the object
		return Frame{Kind: k, Data: data}, true, nil
	}
	if c := fastCommand(line); c != nil { // it takes the spaces around the object
		return Frame{Kind: KindCommand, Command: c}, true, nil
	}
	line = trimEOL(line)
	if len(bytes.TrimSpace(line)) == 0 {
		return Frame{}, false, nil
	}
	f, err = d.general(line)
	return f, true, err
}

// fill reads once more into the buffer, after moving the unread bytes to
// its front. A read that fills the buffer makes it grow: the stream is
// fast, and fewer reads serve it better.
func (d *Decoder) fill() {
	if d.start > 0 {
		n := copy(d.buf, d.buf[d.start:d.end])
		d.scanned = max(d.scanned-d.start, 0)
		d.start, d.end = 0, n
	}
	for range 100 {
		n, err := d.r.Read(d.buf[d.end:])
		d.end += n
		if err != nil {
			d.rerr = err
			return
		}
		if n > 0 {
			if d.end == len(d.buf) {
				d.grow(d.maxBuf)
			}
			return
		}
	}
	d.rerr = io.ErrNoProgress
}

// grow doubles the buffer, up to limit.
func (d *Decoder) grow(limit int) {
	if len(d.buf) >= limit {
		return
	}
	buf := make([]byte, min(2*len(d.buf), limit))
	d.end = copy(buf, d.buf[d.start:d.end])
	d.scanned = max(d.scanned-d.start, 0)
	d.start, d.buf = 0, buf
}

// Close releases what the decoder holds: its buffer, and a temporary file
// for a long line whose stream came after its data. The data of the last
// frame is no longer valid; Next returns an error from then on. The body
// is the caller's to close.
func (d *Decoder) Close() {
	if d.long != nil {
		d.long.spool.close()
		d.long = nil
	}
	if d.err == nil {
		d.err = errClosed
	}
	if cap(d.buf) == minBuffer {
		buffers.Put((*[minBuffer]byte)(d.buf[:minBuffer]))
	}
	d.buf, d.start, d.end, d.scanned = nil, 0, 0, 0
}

// Ended reports whether the body has ended (cleanly or not).
func (d *Decoder) Ended() bool { return d.rerr != nil }

// Drain reads the rest of the body, up to limit bytes, and reports whether
// it ended cleanly: then the connection it came on can serve another call.
func (d *Decoder) Drain(limit int64) bool {
	d.Close()
	if d.rerr == nil {
		n, err := io.Copy(io.Discard, io.LimitReader(d.r, limit+1))
		if n > limit {
			return false
		}
		d.rerr = err
		if err == nil {
			d.rerr = io.EOF
		}
	}
	return d.rerr == io.EOF
}

// ended is the error of a body that ended: io.EOF, or the read error.
func (d *Decoder) ended() error {
	if d.rerr == io.EOF {
		return io.EOF
	}
	return &apierr.StreamError{Code: "stream_ended_early", Message: "reading the stream failed",
		SessionID: d.sessionID, CommandID: d.commandID, Err: d.rerr}
}

func (d *Decoder) malformed(err error) error {
	return d.streamError("malformed_frame", err.Error())
}

func (d *Decoder) tooLarge(format string, args ...any) error {
	return d.streamError("frame_too_large", fmt.Sprintf(format, args...))
}

// streamError is an error of the stream whose code and message may quote
// the server: its secrets are hidden.
func (d *Decoder) streamError(code, message string) error {
	return &apierr.StreamError{Code: d.secrets.String(code), Message: d.secrets.String(message),
		SessionID: d.sessionID, CommandID: d.commandID}
}

// EndedEarly is the error of a stream that ended before its final frame.
func EndedEarly(sessionID, commandID, what string) error {
	return &apierr.StreamError{Code: "stream_ended_early", Message: "the stream ended " + what,
		SessionID: sessionID, CommandID: commandID}
}

// trimEOL removes the trailing run of '\r' and '\n' bytes from b.
func trimEOL(b []byte) []byte {
	n := len(b)
	for n > 0 && (b[n-1] == '\n' || b[n-1] == '\r') {
		n--
	}
	return b[:n]
}

// logLine reports whether b starts like a log line, the only kind that
// may be longer than the buffer: its first key is "data" or "stream".
func logLine(b []byte) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	key, _ := token(b, skipSpace(b, i+1), `"stream"`, `"data"`)
	return key != ""
}

// minSecret is the shortest credential hidden in errors, as the API
// client hides them in its own: hiding a shorter one would mangle the text
// without protecting anything.
const minSecret = 8

// Secrets returns what the errors of a streamed answer must hide: the
// credential its request carried (the request the transport answered
// records it), and every token shape.
func Secrets(resp *http.Response) *redact.Set {
	if resp == nil || resp.Request == nil {
		return nil
	}
	v := resp.Request.Header.Get("Authorization")
	if _, cred, ok := strings.Cut(v, " "); ok {
		v = cred
	}
	if len(v) < minSecret {
		return nil
	}
	return redact.NewSet(v)
}

// CheckContentType refuses an answer that is not an NDJSON stream; what
// names the stream expected ("logs", "command data") in the error, and
// the server's text in it goes through secrets.
func CheckContentType(h http.Header, secrets *redact.Set, what, sessionID, commandID string) error {
	ct := h.Get("Content-Type")
	if ct == wire.ContentNDJSON {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == wire.ContentNDJSON {
		return nil
	}
	return &apierr.StreamError{Code: "unexpected_content_type", SessionID: sessionID, CommandID: commandID,
		Message: fmt.Sprintf("expected a stream of %s (%s), got %q", what, wire.ContentNDJSON, secrets.String(ct))}
}

// errNotFrame is the error of a line that is neither a command nor a log
// line.
var errNotFrame = errors.New("line is neither a command nor a log line")
