package cmdstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
func members(line []byte, each func(key string, v json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return errors.New("line is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string) // a key, inside an object
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := each(key, v); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
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
