package cmdstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf16"
	"unicode/utf8"
)

// A log line longer than the buffer is decoded as it arrives, one step at
// a time, and its data handed out in pieces. Its data is decoded in chunks
// of at most pieceSize bytes, into a scratch buffer that the pieces are
// slices of. Every other token of the line (a key, the stream's name, the
// value of another key) must fit in the buffer, and is checked with
// encoding/json, so that the line decodes as the general path decodes it
// whole. A line that turns out not to be a valid log line after pieces of
// its data were handed out ends the stream with an error.

// pieceSize bounds the input of one piece of data.
const pieceSize = 32 << 10

// maxErrorMessage bounds the message kept from a long error line.
const maxErrorMessage = 1 << 10

// Steps of a long line.
const (
	stepOpen   = iota // before its '{'
	stepMember        // before a key, or the '}' of an empty object
	stepNext          // before a key, after a ','
	stepData          // inside the data string
	stepAfter         // after a value
	stepEnd           // after the '}'
	stepReplay        // handing out the spooled data
)

// longLine is the state of a long log line.
type longLine struct {
	step      int
	name      string // the stream's name, once seen
	sawStream bool
	sawData   bool
	raw       []byte // a data value that is not a string
	message   []byte // the start of the data of an error line
	out       []byte // the scratch buffer pieces are slices of
	spool     spool  // data decoded before the stream's name was seen
}

// nextPiece returns the next piece of a long line's data, or the frame
// after the line.
func (d *Decoder) nextPiece() (Frame, error) {
	l := d.long
	for {
		switch l.step {
		case stepOpen:
			if err := d.expect('{'); err != nil {
				return Frame{}, err
			}
			l.step = stepMember
		case stepMember, stepNext:
			c, err := d.peek()
			if err != nil {
				return Frame{}, err
			}
			if c == '}' && l.step == stepMember {
				d.start++
				l.step = stepEnd
				continue
			}
			if err := d.member(l); err != nil {
				return Frame{}, err
			}
		case stepData:
			if f, ok, err := d.dataPiece(l); ok || err != nil {
				return f, err
			}
		case stepAfter:
			c, err := d.peek()
			if err != nil {
				return Frame{}, err
			}
			d.start++
			switch c {
			case ',':
				l.step = stepNext
			case '}':
				l.step = stepEnd
			default:
				return Frame{}, d.malformed(fmt.Errorf("invalid character %q after a value", c))
			}
		case stepEnd:
			c, err := d.peek()
			switch {
			case err == nil && c == '\n':
				d.start++
			case err == nil:
				return Frame{}, d.malformed(errors.New("text after the frame"))
			case d.rerr != io.EOF:
				return Frame{}, err
			}
			d.scanned = d.start
			if err := d.endLine(l); err != nil {
				return Frame{}, err
			}
		case stepReplay:
			p, err := l.spool.next(l.out[:cap(l.out)])
			if err != nil {
				return Frame{}, d.tooLarge("replaying data held back: %v", err)
			}
			if len(p) > 0 {
				return Frame{Kind: streamKind(l.name), Data: p}, nil
			}
			l.spool.close()
			d.long = nil
			return d.next()
		}
	}
}

// member decodes a key and its value, up to the data string's contents.
func (d *Decoder) member(l *longLine) error {
	n, err := d.token("a key", stringToken)
	if err != nil {
		return err
	}
	var key string
	if err := json.Unmarshal(d.buf[d.start:d.start+n], &key); err != nil {
		return d.malformed(err)
	}
	d.start += n
	if err := d.expect(':'); err != nil {
		return err
	}
	if _, err := d.peek(); err != nil {
		return err
	}
	l.step = stepAfter
	switch key {
	case "stream":
		n, err := d.token("the stream's name", valueToken)
		if err != nil {
			return err
		}
		if l.sawStream {
			return d.malformed(errors.New(`repeated key "stream"`))
		}
		if err := json.Unmarshal(d.buf[d.start:d.start+n], &l.name); err != nil {
			return d.malformed(fmt.Errorf("stream is not a string: %w", err))
		}
		d.start += n
		l.sawStream = true
	case "data":
		if l.sawData {
			return d.malformed(errors.New(`repeated key "data"`))
		}
		l.sawData = true
		if d.buf[d.start] == '"' {
			d.start++
			l.step = stepData
			return nil
		}
		n, err := d.value("a data value that is not a string")
		if err != nil {
			return err
		}
		l.raw = append([]byte(nil), d.buf[d.start:d.start+n]...)
		d.start += n
	case "command":
		return d.tooLarge("a command line is longer than %d bytes", d.maxBuf)
	default:
		n, err := d.value("the value of an unknown key")
		if err != nil {
			return err
		}
		d.start += n
	}
	return nil
}

// dataPiece decodes the next chunk of the data string. It returns a frame
// (ok) when the chunk is to be handed out now.
func (d *Decoder) dataPiece(l *longLine) (f Frame, ok bool, err error) {
	if l.out == nil {
		l.out = make([]byte, 0, 3*pieceSize+utf8.UTFMax)
	}
	src := d.buf[d.start:d.end]
	final := d.rerr != nil
	if len(src) > pieceSize {
		src, final = src[:pieceSize], false
	}
	out, n, closed, err := unquoteChunk(l.out[:0], src, final)
	if err != nil {
		return Frame{}, false, d.malformed(err)
	}
	d.start += n
	if closed {
		l.step = stepAfter
	} else if n == 0 {
		if d.rerr != nil {
			return Frame{}, false, d.cut("inside its data")
		}
		d.fill()
	}
	if len(out) == 0 {
		return Frame{}, false, nil
	}
	switch {
	case !l.sawStream:
		if err := l.spool.write(out); err != nil {
			return Frame{}, false, d.tooLarge("holding back data whose stream is not known yet: %v", err)
		}
	case l.name == "stdout" || l.name == "stderr":
		return Frame{Kind: streamKind(l.name), Data: out}, true, nil
	case l.name == "error":
		l.message = append(l.message, out[:min(len(out), maxErrorMessage-len(l.message))]...)
	}
	return Frame{}, false, nil
}

// endLine decides what a long line was, once it has ended.
func (d *Decoder) endLine(l *longLine) error {
	switch {
	case !l.sawStream || l.name != "stdout" && l.name != "stderr" && l.name != "error":
		return d.malformed(errNotFrame)
	case !l.sawData:
		return d.malformed(fmt.Errorf("data of a %s frame is missing", l.name))
	case l.name == "error":
		if l.raw == nil {
			m, _ := l.spool.next(make([]byte, maxErrorMessage))
			m = append(m[:min(len(m), maxErrorMessage):min(len(m), maxErrorMessage)], l.message...)
			return d.streamError("stream_error", string(m))
		}
		return d.errorFrame(l.raw)
	case l.raw != nil && string(l.raw) != "null":
		return d.malformed(fmt.Errorf("data of a %s frame is not a string", l.name))
	}
	l.step = stepReplay
	return nil
}

// peek returns the next byte of the line that is not a space, reading
// more as needed. The end of the body inside a line is an error: the
// line was cut.
func (d *Decoder) peek() (byte, error) {
	for {
		for d.start < d.end {
			switch c := d.buf[d.start]; c {
			case ' ', '\t', '\r':
				d.start++
			default:
				return c, nil
			}
		}
		if d.rerr != nil {
			return 0, d.cut("")
		}
		d.fill()
	}
}

// expect consumes c, the next byte of the line that is not a space.
func (d *Decoder) expect(c byte) error {
	got, err := d.peek()
	if err != nil {
		return err
	}
	if got != c {
		return d.malformed(fmt.Errorf("invalid character %q, want %q", got, c))
	}
	d.start++
	return nil
}

// token returns the length of the token at the start of the unread bytes,
// reading more as needed; scan returns it, or -1 while the token may go
// on. A token that does not fit in the buffer is refused.
func (d *Decoder) token(what string, scan func(b []byte, final bool) int) (int, error) {
	for {
		if n := scan(d.buf[d.start:d.end], d.rerr != nil); n >= 0 {
			return n, nil
		}
		if d.rerr != nil {
			return 0, d.cut("")
		}
		if d.start == 0 && d.end == len(d.buf) {
			return 0, d.tooLarge("%s is longer than %d bytes", what, len(d.buf))
		}
		d.fill()
	}
}

// value returns the length of the valid JSON value at the start of the
// unread bytes; what names it in errors.
func (d *Decoder) value(what string) (int, error) {
	n, err := d.token(what, valueToken)
	if err == nil && !json.Valid(d.buf[d.start:d.start+n]) {
		err = d.malformed(fmt.Errorf("%s is not valid JSON", what))
	}
	return n, err
}

// cut is the error of a body that ended inside a long line: a malformed
// line at the end of the body, or the read error.
func (d *Decoder) cut(where string) error {
	if d.rerr != io.EOF {
		return d.ended()
	}
	return d.malformed(fmt.Errorf("the line ends early %s", where))
}

// stringToken scans the JSON string at b[0], if b starts with one; its
// contents are checked when it is decoded.
func stringToken(b []byte, final bool) int {
	if len(b) == 0 || b[0] != '"' {
		if len(b) == 0 && !final {
			return -1
		}
		return 0 // not a string: decoding it says why
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		case '\n':
			return i // the line ends inside the string: decoding it says so
		}
	}
	if final {
		return len(b)
	}
	return -1
}

// valueToken scans the JSON value at b[0]: a string, an object or array
// (to its matching bracket), or a literal or number (to the next
// delimiter). What it scans is checked when it is decoded.
func valueToken(b []byte, final bool) int {
	if len(b) == 0 {
		if final {
			return 0
		}
		return -1
	}
	switch b[0] {
	case '"':
		return stringToken(b, final)
	case '{', '[':
		depth := 0
		for i := 0; i < len(b); i++ {
			switch b[i] {
			case '"':
				n := stringToken(b[i:], final)
				if n < 0 {
					return -1
				}
				i += max(n, 1) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '\n':
				return i
			}
		}
	default:
		for i, c := range b {
			switch c {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
		}
	}
	if final {
		return len(b)
	}
	return -1
}

// spoolMemory is how much of the data held back by a long line waits in
// memory; the rest waits in a temporary file.
const spoolMemory = 1 << 20

// spool holds the data of a long line that came before its stream's name,
// to be handed out once the name is known.
type spool struct {
	mem  []byte
	file *os.File
	off  int64 // what next has handed out
}

func (s *spool) write(p []byte) error {
	if s.file == nil {
		if len(s.mem)+len(p) <= spoolMemory {
			s.mem = append(s.mem, p...)
			return nil
		}
		f, err := os.CreateTemp("", "vercel-sandbox-output-*")
		if err != nil {
			return err
		}
		// Unlinked at once where the system allows it (the open file
		// stays usable), so that not even a crash leaves it behind.
		_ = os.Remove(f.Name())
		s.file = f
		if _, err := f.Write(s.mem); err != nil {
			return err
		}
		s.mem = nil
	}
	_, err := s.file.Write(p)
	return err
}

// next returns the next piece of the data held, at most len(buf) bytes,
// and an empty one at the end; buf is where a piece from the file is read.
func (s *spool) next(buf []byte) ([]byte, error) {
	if s.file == nil {
		p := s.mem[min(int(s.off), len(s.mem)):]
		p = p[:min(len(p), len(buf))]
		s.off += int64(len(p))
		return p, nil
	}
	n, err := s.file.ReadAt(buf, s.off)
	s.off += int64(n)
	if err == io.EOF {
		err = nil
	}
	return buf[:n], err
}

// close removes the temporary file, if any.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
		s.file = nil
	}
	s.mem = nil
}

// unquoteChunk decodes src, the contents of a JSON string from where the
// last chunk stopped, appending to dst what encoding/json would decode
// (invalid UTF-8 and unpaired surrogates become U+FFFD). It stops after
// the closing quote (closed), or before an escape or UTF-8 sequence that
// src cuts, unless final says no more bytes follow src. n is how much of
// src it used.
func unquoteChunk(dst, src []byte, final bool) (out []byte, n int, closed bool, err error) {
	i := 0
	for i < len(src) {
		k := plainRun(src[i:], &plainASCII)
		dst = append(dst, src[i:i+k]...)
		if i += k; i == len(src) {
			break
		}
		switch c := src[i]; {
		case c == '"':
			return dst, i + 1, true, nil
		case c == '\\':
			var m int
			dst, m, err = unescapeOne(dst, src[i:], final)
			if err != nil || m == 0 {
				return dst, i, false, err
			}
			i += m
		case c < 0x20:
			return dst, i, false, fmt.Errorf("control character %#x in a string", c)
		default:
			if !final && !utf8.FullRune(src[i:]) {
				return dst, i, false, nil
			}
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, src[i:i+size]...)
			}
			i += size
		}
	}
	return dst, i, false, nil
}

// unescapeOne decodes the escape at the start of s, as encoding/json does,
// and returns how many bytes of s it used: 0 when s cuts it and more may
// follow.
func unescapeOne(dst, s []byte, final bool) ([]byte, int, error) {
	if len(s) < 2 {
		return dst, 0, cutEscape(final)
	}
	if c := escaped[s[1]]; c != 0 {
		return append(dst, c), 2, nil
	}
	if s[1] != 'u' {
		return dst, 0, fmt.Errorf("invalid escape %q in a string", s[:2])
	}
	if len(s) < 6 {
		return dst, 0, cutEscape(final)
	}
	r := hex4(s[2:6])
	if r < 0 {
		return dst, 0, fmt.Errorf("invalid escape %q in a string", s[:6])
	}
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(dst, r), 6, nil
	}
	// A surrogate makes a rune with the \u escape right after it, if that
	// is its pair; otherwise it is U+FFFD, and what follows stands alone.
	if len(s) < 12 && !final && (len(s) < 7 || s[6] == '\\') && (len(s) < 8 || s[7] == 'u') {
		return dst, 0, nil
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if r2 := hex4(s[8:12]); r2 >= 0 {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return utf8.AppendRune(dst, dec), 12, nil
			}
		}
	}
	return utf8.AppendRune(dst, utf8.RuneError), 6, nil
}

func cutEscape(final bool) error {
	if final {
		return errors.New("the line ends inside an escape")
	}
	return nil
}

// hex4 decodes four hexadecimal digits; -1 when they are not.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
