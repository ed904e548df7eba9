// Package cmdstream decodes the NDJSON streams of the command endpoints:
// the attached run (a started-command line, log lines, a finished-command
// line) and the log stream (log lines only).
package cmdstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
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

// Frame is one decoded line.
type Frame struct {
	Kind    Kind
	Data    []byte        // log data, for KindStdout and KindStderr
	Command *wire.Command // for KindCommand
}

// Decoder reads frames. It is not safe for concurrent use.
type Decoder struct {
	r         *lineReader
	sessionID string
	commandID string
}

// NewDecoder returns a decoder over an NDJSON body.
func NewDecoder(body io.Reader, sessionID, commandID string) *Decoder {
	return &Decoder{r: newLineReader(body, 0), sessionID: sessionID, commandID: commandID}
}

// SetCommandID names the command in the errors that follow.
func (d *Decoder) SetCommandID(id string) { d.commandID = id }

// Next returns the next frame. A clean end of the body gives io.EOF; an
// error frame gives a *apierr.StreamError with its code; a read error gives
// a *apierr.StreamError that wraps it; a line that is not a valid frame
// gives a *apierr.StreamError with code "malformed_frame".
func (d *Decoder) Next() (Frame, error) {
	line, err := d.r.Next()
	if err != nil {
		if err == io.EOF {
			return Frame{}, io.EOF
		}
		return Frame{}, &apierr.StreamError{Code: "stream_ended_early", Message: "reading the stream failed",
			SessionID: d.sessionID, CommandID: d.commandID, Err: err}
	}
	if f, ok := fastLog(line); ok {
		return f, nil
	}
	return d.general(line)
}

// general decodes a line with encoding/json: any frame, in any form.
// fastLog gives the same result for the log lines it accepts.
func (d *Decoder) general(line []byte) (Frame, error) {
	var f wire.Frame
	if err := json.Unmarshal(line, &f); err != nil {
		return Frame{}, d.malformed(err)
	}
	if f.Command != nil {
		return Frame{Kind: KindCommand, Command: f.Command}, nil
	}
	switch f.Stream {
	case "stdout", "stderr":
		var s string
		if err := json.Unmarshal(f.Data, &s); err != nil {
			return Frame{}, d.malformed(fmt.Errorf("data of a %s frame is not a string: %w", f.Stream, err))
		}
		k := KindStdout
		if f.Stream == "stderr" {
			k = KindStderr
		}
		return Frame{Kind: k, Data: []byte(s)}, nil
	case "error":
		var ed wire.StreamErrorData
		if err := json.Unmarshal(f.Data, &ed); err != nil || ed.Code == "" {
			ed.Code = "stream_error"
			if ed.Message == "" {
				ed.Message = string(f.Data)
			}
		}
		return Frame{}, &apierr.StreamError{Code: ed.Code, Message: ed.Message, SessionID: d.sessionID, CommandID: d.commandID}
	}
	return Frame{}, d.malformed(errors.New("line is neither a command nor a log line"))
}

func (d *Decoder) malformed(err error) error {
	return &apierr.StreamError{Code: "malformed_frame", Message: err.Error(), SessionID: d.sessionID, CommandID: d.commandID}
}

// EndedEarly is the error of a stream that ended before its final frame.
func EndedEarly(sessionID, commandID, what string) error {
	return &apierr.StreamError{Code: "stream_ended_early", Message: "the stream ended " + what,
		SessionID: sessionID, CommandID: commandID}
}

// fastLog decodes a log line whose two keys, "stream" and "data", come in
// either order ({"data":…,"stream":…} is how hosted Vercel writes them,
// {"stream":…,"data":…} how the local backend once did), without a general
// JSON decode: one allocation, of the data's size. Anything else (\u
// escapes, invalid UTF-8, other, repeated or escaped keys, an error frame,
// a command line) takes the general path, which gives the same result.
// The line is left as it is unless it is a log frame; then its data is
// decoded in place, and copied out.
func fastLog(line []byte) (Frame, bool) {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return Frame{}, false
	}
	var k Kind
	var data []byte // the data as it is in the line, without its quotes
	dataEsc := -1   // where its first escape is in data; -1 for none
	haveData := false
	for {
		i = skipSpace(line, i+1)
		var key string
		if key, i = token(line, i, `"stream"`, `"data"`); key == "" {
			return Frame{}, false
		}
		i = skipSpace(line, i)
		if i == len(line) || line[i] != ':' {
			return Frame{}, false
		}
		i = skipSpace(line, i+1)
		if key == `"stream"` {
			var v string
			if v, i = token(line, i, `"stdout"`, `"stderr"`); v == "" || k != 0 {
				return Frame{}, false
			}
			k = KindStdout
			if v == `"stderr"` {
				k = KindStderr
			}
		} else {
			next, esc, ok := scanString(line, i)
			if !ok || haveData {
				return Frame{}, false
			}
			data, dataEsc, haveData, i = line[i+1:next-1], esc, true, next
		}
		i = skipSpace(line, i)
		if i == len(line) {
			return Frame{}, false
		}
		if line[i] == '}' {
			break
		}
		if line[i] != ',' {
			return Frame{}, false
		}
	}
	if k == 0 || !haveData || skipSpace(line, i+1) != len(line) {
		return Frame{}, false
	}
	data = unescape(data, dataEsc)
	out := make([]byte, len(data)) // with the copy, allocated without clearing
	copy(out, data)
	return Frame{Kind: k, Data: out}, true
}

// token returns whichever of a and b starts line[i:], and the index after
// it; "" when neither does. Both are quoted JSON strings without escapes,
// so a match is the whole string.
func token(line []byte, i int, a, b string) (string, int) {
	rest := line[i:]
	switch {
	case len(rest) >= len(a) && string(rest[:len(a)]) == a:
		return a, i + len(a)
	case len(rest) >= len(b) && string(rest[:len(b)]) == b:
		return b, i + len(b)
	}
	return "", i
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// plainASCII marks the ASCII bytes that stand for themselves inside a
// JSON string: all but the quote, the backslash and the control
// characters; plainAll marks the bytes from 0x80 too. They hold 1 for
// those, 0 for the others, so that a run of lookups can be combined with &
// and tested once.
var plainASCII, plainAll = func() (ascii, all [256]uint8) {
	for c := 0x20; c < 256; c++ {
		if c != '"' && c != '\\' {
			all[c] = 1
			if c < 0x80 {
				ascii[c] = 1
			}
		}
	}
	return ascii, all
}()

// escaped maps the byte after a backslash to the byte it stands for, for
// the escapes the fast path decodes; zero for the others (\u and invalid
// ones), which the general path handles.
var escaped = [256]byte{
	'"': '"', '\\': '\\', '/': '/',
	'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
}

// scanString checks the JSON string at b[i] for the fast path, and returns
// the index after its closing quote and where its first escape is in its
// contents (-1 for none). It refuses (ok false) what the fast
// path leaves to encoding/json: \u and invalid escapes, control
// characters, invalid UTF-8, and a string that is not closed.
func scanString(b []byte, i int) (next, esc int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false
	}
	esc = -1
	plain := &plainASCII // until the first byte from 0x80, when UTF-8 has to be checked
	for j := i + 1; j < len(b); {
		rest := b[j:]
		n := plainRun(rest, plain)
		j += n
		if n == len(rest) {
			break
		}
		switch c := rest[n]; c {
		case '"':
			if plain == &plainAll && !utf8.Valid(b[i+1:j]) {
				return 0, 0, false
			}
			return j + 1, esc, true
		case '\\':
			if n+1 == len(rest) || escaped[rest[n+1]] == 0 {
				return 0, 0, false
			}
			if esc < 0 {
				esc = j - i - 1
			}
			j += 2
		default:
			if c < 0x80 { // a control character
				return 0, 0, false
			}
			plain = &plainAll
		}
	}
	return 0, 0, false
}

// plainRun returns how many bytes at the start of s the table plain marks.
// It tests eight bytes at a time while it can: the common string has long
// runs.
func plainRun(s []byte, plain *[256]uint8) int {
	n := 0
	for ; n+8 <= len(s); n += 8 {
		w := s[n : n+8 : n+8]
		if plain[w[0]]&plain[w[1]]&plain[w[2]]&plain[w[3]]&plain[w[4]]&plain[w[5]]&plain[w[6]]&plain[w[7]] == 0 {
			break
		}
	}
	for n < len(s) && plain[s[n]] != 0 {
		n++
	}
	return n
}

// unescape decodes, in place, the contents s of a string scanString
// accepted, whose first escape is at j, and returns the decoded part of s.
func unescape(s []byte, j int) []byte {
	if j < 0 {
		return s
	}
	w := j
	for {
		s[w] = escaped[s[j+1]]
		w, j = w+1, j+2
		k := bytes.IndexByte(s[j:], '\\')
		if k < 0 {
			return s[:w+copy(s[w:], s[j:])]
		}
		w += copy(s[w:], s[j:j+k])
		j += k
	}
}

// CheckContentType refuses an answer that is not an NDJSON stream; what
// names the stream expected ("logs", "command data") in the error.
func CheckContentType(h http.Header, what, sessionID, commandID string) error {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err == nil && mt == wire.ContentNDJSON {
		return nil
	}
	return &apierr.StreamError{Code: "unexpected_content_type", SessionID: sessionID, CommandID: commandID,
		Message: fmt.Sprintf("expected a stream of %s (%s), got %q", what, wire.ContentNDJSON, h.Get("Content-Type"))}
}
