package cmdstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// general decodes a whole line with encoding/json: any frame, in any form.
// fastLog gives the same result for the log lines it accepts. Keys are
// matched exactly (encoding/json alone would take "Stream" for "stream")
// and a repeated key is refused, as a long line is decoded.
func (d *Decoder) general(line []byte) (Frame, error) {
	var command, stream, data json.RawMessage
	err := members(line, func(key []byte, v json.RawMessage) error {
		var dst *json.RawMessage
		switch string(key) {
		case "command":
			dst = &command
		case "stream":
			dst = &stream
		case "data":
			dst = &data
		default:
			dst = new(json.RawMessage)
		}
		if string(key) != "command" && !json.Valid(v) { // a command is checked as it is decoded
			return fmt.Errorf("the value of %q is not valid JSON", key)
		}
		if *dst != nil {
			return fmt.Errorf("repeated key %q", key)
		}
		*dst = v
		return nil
	})
	if err != nil {
		return Frame{}, d.malformed(err)
	}
	if command != nil && !bytes.Equal(command, []byte("null")) {
		var c wire.Command
		if err := json.Unmarshal(command, &c); err != nil {
			return Frame{}, d.malformed(err)
		}
		return Frame{Kind: KindCommand, Command: &c}, nil
	}
	var name string
	if stream != nil {
		if err := json.Unmarshal(stream, &name); err != nil {
			return Frame{}, d.malformed(fmt.Errorf("stream is not a string: %w", err))
		}
	}
	switch name {
	case "stdout", "stderr":
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return Frame{}, d.malformed(fmt.Errorf("data of a %s frame is not a string: %w", name, err))
		}
		return Frame{Kind: streamKind(name), Data: []byte(s)}, nil
	case "error":
		return Frame{}, d.errorFrame(data)
	}
	return Frame{}, d.malformed(errNotFrame)
}

// members calls each with every member of the JSON object line, in order,
// split by the scanners of long lines. Each value is checked by whoever
// decodes it; members checks the structure, the keys and the values of
// unknown keys, so that a line is refused exactly when it is not JSON.
func members(line []byte, each func(key []byte, v json.RawMessage) error) error {
	i := skipSpace(line, 0)
	if i == len(line) || line[i] != '{' {
		return errors.New("line is not a JSON object")
	}
	if i = skipSpace(line, i+1); i < len(line) && line[i] == '}' {
		return textAfter(line, i+1)
	}
	for {
		n := stringToken(line[i:], true)
		if n < 2 || line[i+n-1] != '"' {
			return errors.New("a key is not a string")
		}
		key := line[i+1 : i+n-1]
		if plainRun(key, &plainASCII) != len(key) { // escapes and all: decoded
			var k string
			if err := json.Unmarshal(line[i:i+n], &k); err != nil {
				return err
			}
			key = []byte(k)
		}
		if i = skipSpace(line, i+n); i == len(line) || line[i] != ':' {
			return errors.New("a key is not followed by ':'")
		}
		i = skipSpace(line, i+1)
		n = valueToken(line[i:], true)
		v := line[i : i+n]
		if err := each(key, v); err != nil {
			return err
		}
		if i = skipSpace(line, i+n); i == len(line) {
			return errors.New("the line ends inside the object")
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return textAfter(line, i+1)
		default:
			return fmt.Errorf("invalid character %q after a value", line[i])
		}
	}
}

// textAfter refuses a line with more than spaces after its object, which
// ends before i.
func textAfter(line []byte, i int) error {
	if skipSpace(line, i) != len(line) {
		return errors.New("text after the frame")
	}
	return nil
}

// errorFrame is the error an error frame carries; data is its raw value.
func (d *Decoder) errorFrame(data []byte) error {
	var ed wire.StreamErrorData
	if err := json.Unmarshal(data, &ed); err != nil || ed.Code == "" {
		ed.Code = "stream_error"
		if ed.Message == "" {
			ed.Message = string(data)
		}
	}
	return d.streamError(ed.Code, ed.Message)
}

// streamKind is the kind of a log line of the stream called name.
func streamKind(name string) Kind {
	if name == "stderr" {
		return KindStderr
	}
	return KindStdout
}
