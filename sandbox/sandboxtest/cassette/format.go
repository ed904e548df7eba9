package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// FormatName and FormatVersion identify the file format in a cassette's
// header line.
const (
	FormatName    = "sandboxtest-cassette"
	FormatVersion = 1
)

// Stream ends, as recorded in a stream's "end" field.
const (
	endEOF    = "eof"    // the body ended normally
	endClosed = "closed" // the client closed the body before it ended
	endError  = "error"  // reading the body failed (connection cut)
)

// header is the first line of a cassette.
type header struct {
	Format       string `json:"format"`
	Version      int    `json:"version"`
	ResolutionMs int64  `json:"resolutionMs"`
}

// tarEntry is one entry of an uploaded tar archive.
type tarEntry struct {
	Name   string `json:"name"`
	Type   string `json:"type,omitempty"` // empty for regular files
	Mode   string `json:"mode"`           // octal
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Link   string `json:"link,omitempty"` // symbolic links
}

// bodyRec is a recorded body: JSON, text, stored bytes, or a summary.
type bodyRec struct {
	JSON      json.RawMessage `json:"json,omitempty"`
	Text      *string         `json:"text,omitempty"`
	Base64    []byte          `json:"base64,omitempty"`
	Size      *int64          `json:"size,omitempty"`
	SHA256    string          `json:"sha256,omitempty"`
	Gzip      bool            `json:"gzip,omitempty"`
	Tar       []tarEntry      `json:"tar,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// reqRec is a recorded request.
type reqRec struct {
	Method string              `json:"method"`
	Path   string              `json:"path"`
	Query  map[string][]string `json:"query,omitempty"`
	Header map[string]string   `json:"header,omitempty"`
	Body   *bodyRec            `json:"body,omitempty"`
}

// streamRec describes a recorded NDJSON stream; its frames follow on their
// own lines.
type streamRec struct {
	Frames int    `json:"frames"`
	End    string `json:"end"`
	Error  string `json:"error,omitempty"`
}

// respRec is a recorded response.
type respRec struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   *bodyRec          `json:"body,omitempty"`
	Stream *streamRec        `json:"stream,omitempty"`
}

// frameRec is one NDJSON frame of a stream.
type frameRec struct {
	Seq   int             `json:"seq"`
	Frame int             `json:"frame"`
	At    int64           `json:"at"`
	JSON  json.RawMessage `json:"json,omitempty"`
	Text  *string         `json:"text,omitempty"`
	NoEOL bool            `json:"noEOL,omitempty"`
}

// interaction is one request and what came back.
type interaction struct {
	Seq      int      `json:"seq"`
	Request  reqRec   `json:"request"`
	Response *respRec `json:"response,omitempty"`
	Error    string   `json:"error,omitempty"`

	frames []frameRec
}

// line is the union of all line shapes, for reading.
type line struct {
	Format   string          `json:"format"`
	Version  int             `json:"version"`
	Seq      *int            `json:"seq"`
	Request  *reqRec         `json:"request"`
	Response *respRec        `json:"response"`
	Error    string          `json:"error"`
	Frame    *int            `json:"frame"`
	At       int64           `json:"at"`
	JSON     json.RawMessage `json:"json"`
	Text     *string         `json:"text"`
	NoEOL    bool            `json:"noEOL"`
}

// marshalLine encodes v as one line of JSON without HTML escaping.
func marshalLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// canonical encodes a decoded JSON value compactly with sorted keys.
func canonical(v any) json.RawMessage {
	b, err := marshalLine(v)
	if err != nil {
		// Only values decoded from JSON get here; they always encode.
		panic("cassette: " + err.Error())
	}
	return json.RawMessage(bytes.TrimSuffix(b, []byte("\n")))
}

// decodeJSON decodes exactly one JSON value, keeping numbers exact.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// encode writes a cassette: the header line, then each interaction in
// order, each followed by its frames.
func encode(w io.Writer, resMs int64, its []*interaction) error {
	bw := bufio.NewWriter(w)
	write := func(v any) error {
		b, err := marshalLine(v)
		if err != nil {
			return err
		}
		_, err = bw.Write(b)
		return err
	}
	if err := write(header{Format: FormatName, Version: FormatVersion, ResolutionMs: resMs}); err != nil {
		return err
	}
	for _, it := range its {
		if err := write(it); err != nil {
			return err
		}
		for _, f := range it.frames {
			if err := write(f); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// decode reads a cassette written by encode.
func decode(r io.Reader) ([]*interaction, error) {
	br := bufio.NewReader(r)
	var its []*interaction
	bySeq := map[int]*interaction{}
	n := 0
	for {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			n++
			var l line
			if jerr := json.Unmarshal(raw, &l); jerr != nil {
				return nil, fmt.Errorf("line %d: %w", n, jerr)
			}
			switch {
			case n == 1:
				if l.Format != FormatName {
					return nil, fmt.Errorf("line 1: not a cassette (format %q, want %q)", l.Format, FormatName)
				}
				if l.Version != FormatVersion {
					return nil, fmt.Errorf("line 1: unsupported format version %d (this package reads %d)", l.Version, FormatVersion)
				}
			case l.Frame != nil:
				if l.Seq == nil || bySeq[*l.Seq] == nil {
					return nil, fmt.Errorf("line %d: frame of an unknown interaction", n)
				}
				it := bySeq[*l.Seq]
				it.frames = append(it.frames, frameRec{Seq: *l.Seq, Frame: *l.Frame, At: l.At, JSON: l.JSON, Text: l.Text, NoEOL: l.NoEOL})
			case l.Request != nil:
				if l.Seq == nil {
					return nil, fmt.Errorf("line %d: interaction without seq", n)
				}
				it := &interaction{Seq: *l.Seq, Request: *l.Request, Response: l.Response, Error: l.Error}
				if bySeq[it.Seq] != nil {
					return nil, fmt.Errorf("line %d: duplicate seq %d", n, it.Seq)
				}
				bySeq[it.Seq] = it
				its = append(its, it)
			default:
				return nil, fmt.Errorf("line %d: neither an interaction nor a frame", n)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return nil, errors.New("empty file")
	}
	for _, it := range its {
		if s := it.Response; s != nil && s.Stream != nil && s.Stream.Frames != len(it.frames) {
			return nil, fmt.Errorf("interaction %d: %d frames recorded, header says %d", it.Seq, len(it.frames), s.Stream.Frames)
		}
	}
	return its, nil
}

// render describes a normalised request as text, one fact per line; two
// requests match when their renderings are equal, and a mismatch is shown
// as a line diff of the renderings.
func (r *reqRec) render() string {
	var b strings.Builder
	b.WriteString(r.Method + " " + r.Path + "\n")
	keys := make([]string, 0, len(r.Query))
	for k := range r.Query {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.Query[k] {
			b.WriteString("query " + k + "=" + v + "\n")
		}
	}
	if r.Body != nil {
		r.Body.render(&b)
	}
	return b.String()
}

func (bd *bodyRec) render(b *strings.Builder) {
	switch {
	case bd.JSON != nil:
		var out bytes.Buffer
		if err := json.Indent(&out, bd.JSON, "", "  "); err != nil {
			out.Reset()
			out.Write(bd.JSON)
		}
		b.WriteString("body " + out.String() + "\n")
	case bd.Text != nil:
		b.WriteString("body text " + strconv.Quote(*bd.Text) + "\n")
	case bd.Tar != nil || bd.Gzip:
		for _, e := range bd.Tar {
			typ := e.Type
			if typ == "" {
				typ = "file"
			}
			fmt.Fprintf(b, "tar %s %s mode=%s size=%d sha256=%s link=%s\n", typ, e.Name, e.Mode, e.Size, e.SHA256, e.Link)
		}
		if bd.Truncated && bd.Size == nil {
			b.WriteString("tar truncated\n")
		}
	}
	if bd.Size != nil {
		fmt.Fprintf(b, "body size=%d sha256=%s", *bd.Size, bd.SHA256)
		if bd.Truncated {
			b.WriteString(" truncated")
		}
		b.WriteString("\n")
	}
}
