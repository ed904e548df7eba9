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
	err := members(line, func(key string, v json.RawMessage) error {
		var dst *json.RawMessage
		switch key {
		case "command":
			dst = &command
		case "stream":
			dst = &stream
		case "data":
			dst = &data
		default:
			return nil
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

// members calls each with every member of the JSON object line, in order.
// Once the line is known to be valid JSON, the scanners of long lines split
// it without a decoder.
func members(line []byte, each func(key string, v json.RawMessage) error) error {
	if !json.Valid(line) {
		return json.Unmarshal(line, new(any)) // for its error
	}
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return errors.New("line is not a JSON object")
	}
	i = skipSpace(line, i+1)
	for line[i] != '}' {
		n := stringToken(line[i:], true)
		key := string(line[i+1 : i+n-1])
		if bytes.IndexByte(line[i:i+n], '\\') >= 0 {
			if err := json.Unmarshal(line[i:i+n], &key); err != nil {
				return err
			}
		}
		i = skipSpace(line, skipSpace(line, i+n)+1) // the key, spaces, ':', spaces
		n = valueToken(line[i:], true)
		if err := each(key, line[i:i+n]); err != nil {
			return err
		}
		if i = skipSpace(line, i+n); line[i] == ',' {
			i = skipSpace(line, i+1)
		}
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
