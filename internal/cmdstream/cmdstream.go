// Package cmdstream decodes the NDJSON streams of the command endpoints:
// the attached run (a started-command line, log lines, a finished-command
// line) and the log stream (log lines only).
package cmdstream

import (
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
// JSON decode: one allocation, for the data. Anything else (\u escapes,
// other or repeated keys, an error frame, a command line) takes the general
// path, which gives the same result.
func fastLog(line []byte) (Frame, bool) {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return Frame{}, false
	}
	var k Kind
	var data []byte
	haveData := false
	for {
		i = skipSpace(line, i+1)
		key, next, ok := rawString(line, i)
		if !ok {
			return Frame{}, false
		}
		i = skipSpace(line, next)
		if i == len(line) || line[i] != ':' {
			return Frame{}, false
		}
		i = skipSpace(line, i+1)
		switch string(key) {
		case "stream":
			v, next, ok := rawString(line, i)
			if !ok || k != 0 {
				return Frame{}, false
			}
			switch string(v) {
			case "stdout":
				k = KindStdout
			case "stderr":
				k = KindStderr
			default:
				return Frame{}, false
			}
			i = next
		case "data":
			if haveData {
				return Frame{}, false
			}
			data, i, ok = unquote(line, i)
			if !ok {
				return Frame{}, false
			}
			haveData = true
		default:
			return Frame{}, false
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
	return Frame{Kind: k, Data: data}, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// rawString returns the contents of the JSON string at b[i] when it has no
// escapes, and the index after its closing quote.
func rawString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// unquote decodes the JSON string at b[i] into a new slice, and returns
// the index after its closing quote. It refuses \u escapes and invalid
// UTF-8, which the general path handles.
func unquote(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end := i + 1
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(b) {
		return nil, 0, false
	}
	data := b[i+1 : end]
	out := make([]byte, 0, len(data))
	for j := 0; j < len(data); j++ {
		c := data[j]
		switch {
		case c < 0x20:
			return nil, 0, false
		case c != '\\':
			out = append(out, c)
			continue
		}
		j++
		switch data[j] {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case '"', '\\', '/':
			out = append(out, data[j])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		default: // \u escapes and anything unexpected
			return nil, 0, false
		}
	}
	if !utf8.Valid(out) {
		return nil, 0, false
	}
	return out, end + 1, true
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
