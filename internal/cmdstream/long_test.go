package cmdstream

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// sized returns a decoder whose buffer grows to maxBuf, and holds lines
// that are not log lines up to maxHeld, so that short test lines take the
// path of long ones.
func sized(r io.Reader, maxBuf, maxHeld int) *Decoder {
	d := NewDecoder(r, nil, "s", "c")
	d.buf = make([]byte, min(minBuffer, maxBuf))
	d.maxBuf, d.maxHeld = maxBuf, maxHeld
	return d
}

// decoded is what a stream decodes to: the data of each stream, the
// command lines, and the error that ended it (nil for the end).
type decoded struct {
	out      [2][]byte
	commands int
	err      error
}

func decodeAll(d *Decoder) decoded {
	var got decoded
	for {
		fr, err := d.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			got.err = err
			return got
		}
		switch fr.Kind {
		case KindStdout:
			got.out[0] = append(got.out[0], fr.Data...)
		case KindStderr:
			got.out[1] = append(got.out[1], fr.Data...)
		case KindCommand:
			got.commands++
		}
	}
}

// chunkReader returns its data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func code(err error) string {
	var se *apierr.StreamError
	if errors.As(err, &se) {
		return se.Code
	}
	return ""
}

// sameAsWhole checks that data, read in chunks of chunk bytes by a
// decoder of buffer maxBuf, decodes as read whole: the same bytes when the
// stream is valid, an error after the same bytes when it is not. It
// reports false when the small decoder refused a line as too large, which
// the whole one took.
func sameAsWhole(t *testing.T, data []byte, maxBuf, chunk int) bool {
	t.Helper()
	want := decodeAll(NewDecoder(bytes.NewReader(data), nil, "s", "c"))
	got := decodeAll(sized(&chunkReader{data: data, n: chunk}, maxBuf, 4*maxBuf))
	if code(got.err) == "frame_too_large" {
		return false
	}
	if got.err != nil && code(got.err) == "" {
		t.Fatalf("%q: untyped error %T %v", data, got.err, got.err)
	}
	if want.err == nil {
		if got.err != nil || !bytes.Equal(got.out[0], want.out[0]) || !bytes.Equal(got.out[1], want.out[1]) || got.commands != want.commands {
			t.Fatalf("%q (buffer %d, reads of %d): got %q %q %d %v, want %q %q %d", data, maxBuf, chunk,
				got.out[0], got.out[1], got.commands, got.err, want.out[0], want.out[1], want.commands)
		}
		return true
	}
	if got.err == nil || !bytes.HasPrefix(got.out[0], want.out[0]) || !bytes.HasPrefix(got.out[1], want.out[1]) {
		t.Fatalf("%q (buffer %d, reads of %d): got %q %q %v, want an error after %q %q (%v)", data, maxBuf, chunk,
			got.out[0], got.out[1], got.err, want.out[0], want.out[1], want.err)
	}
	return true
}

// TestLongLinesDecodeAsWhole decodes lines longer than a small buffer, in
// reads of every size, as they decode whole.
func TestLongLinesDecodeAsWhole(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"stream":"stdout","data":"plain text that is longer than the buffer"}`,
		`{"data":"plain text that is longer than the buffer, data first","stream":"stderr"}`,
		`{"data":"esc\\ap\"es\n\t\r\b\f\/ and \u00e9\u20ac\ud83d\ude00 \ud83d alone \udc00 é✓😀 \u0000","stream":"stdout"}`,
		"{\"stream\":\"stdout\",\"data\":\"invalid \xff\xfe utf-8 and a cut \xe2\x82 rune\"}",
		` { "stream" : "stdout" , "extra" : {"a":[1,"}"]} , "data" : "spaced out members" , "n" : 12 } `,
		`{"stream":"stdout","data":null}`,
		`{"stream":"error","data":{"code":"sandbox_stopped","message":"the sandbox stopped"}}`,
		`{"data":"an error line with its data first","stream":"error"}`,
		`{"command":{"id":"cmd_1","name":"sh","args":["-c","a long command line"],"exitCode":null}}`,
		`{"stream":"Stdout","data":"a stream of the wrong name"}`,
		`{"Stream":"stdout","data":"a key of the wrong case"}`,
		`{"stream":"stdout","data":"a repeated key","data":"x"}`,
		`{"stream":"stdout","data":"control character` + "\x01" + `"}`,
		`{"stream":"stdout","data":"bad escape \x here"}`,
		`{"stream":"stdout","data":"not closed`,
		`{"stream":"stdout","data":"text after"} x`,
		`{"stream":"stdout","data":"trailing comma",}`,
		`{"stream":"stdout","data":"x","extra":[1,2}`,
		`{"stream":"stdout","data":1234567890123456789012345678901234567890}`,
	}
	for _, line := range lines {
		for _, body := range []string{line, line + "\n", line + "\r\n" + `{"stream":"stdout","data":"next"}` + "\n"} {
			for _, chunk := range []int{1, 2, 3, 5, 7, 13, 64, 1 << 10} {
				sameAsWhole(t, []byte(body), 32, chunk)
			}
		}
	}
}

// FuzzSplit checks that any split of a stream (into reads of any size,
// through a buffer of any size) decodes to the same bytes as the stream
// read whole.
func FuzzSplit(f *testing.F) {
	f.Add([]byte(`{"data":"a\nb\"c\\d\u00e9\ud83d\ude00é","stream":"stdout"}`+"\n"+`{"stream":"stderr","data":"x"}`), uint8(16), uint8(1))
	f.Add([]byte(`{"command":{"id":"c","exitCode":null}}`+"\n"+`{"stream":"stdout","data":"long enough to be long"}`), uint8(0), uint8(3))
	f.Add([]byte(`{"stream":"error","data":{"code":"a","message":"m"}}`), uint8(40), uint8(7))
	f.Add([]byte("{\"data\":\"\xff\xe2\x82\",\"stream\":\"stdout\",\"x\":null}"), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, buf, chunk uint8) {
		sameAsWhole(t, data, 16+int(buf), 1+int(chunk))
	})
}

// hugeLine returns a log line of n bytes of data and the data's hash;
// dataFirst puts the data before the stream's name, as hosted Vercel does.
func hugeLine(n int, dataFirst bool) (io.Reader, [32]byte) {
	chunk := []byte(strings.Repeat("0123456789abcdef", 64))
	data := bytes.Repeat(chunk, n/len(chunk))
	head, tail := `{"stream":"stdout","data":"`, `"}`+"\n"
	if dataFirst {
		head, tail = `{"data":"`, `","stream":"stdout"}`+"\n"
	}
	return io.MultiReader(strings.NewReader(head), bytes.NewReader(data), strings.NewReader(tail)), sha256.Sum256(data)
}

// TestLongLineInPieces decodes a 64 MiB line in pieces of at most the
// buffer, in both key orders; data first, it waits in a temporary file
// that is removed after.
func TestLongLineInPieces(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	for _, dataFirst := range []bool{false, true} {
		r, want := hugeLine(64<<20, dataFirst)
		d := NewDecoder(r, nil, "s", "c")
		h := sha256.New()
		pieces := 0
		for {
			fr, err := d.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			require.Equal(t, KindStdout, fr.Kind)
			require.LessOrEqual(t, len(fr.Data), 3*pieceSize+4)
			h.Write(fr.Data)
			pieces++
		}
		assert.Equal(t, want[:], h.Sum(nil), "data first: %v", dataFirst)
		assert.Greater(t, pieces, 64<<20/(3*pieceSize+4))
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, left, "no temporary file is left")
		assert.LessOrEqual(t, len(d.buf), maxBuffer)
	}
}

// TestLongFieldsRefused checks that a long line whose long part is not
// its data is refused, having read no more than its buffer of it.
func TestLongFieldsRefused(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 4<<20)
	for name, line := range map[string]string{
		"stream":      `{"stream":"` + big + `","data":"x"}`,
		"unknown key": `{"data":"x","` + big + `":1}`,
		"unknown":     `{"stream":"stdout","data":"x","other":"` + big + `"}`,
		"error data":  `{"stream":"error","data":{"message":"` + big + `"}}`,
		"not a log":   `{"` + big + `":1}`,
		"command":     `{"command":{"id":"` + big + `"}}`,
		"spaces":      strings.Repeat(" ", 4<<20) + "{}",
	} {
		r := strings.NewReader(line)
		err := decodeAll(NewDecoder(r, nil, "s", "c")).err
		assert.Equal(t, "frame_too_large", code(err), name)
		assert.LessOrEqual(t, len(line)-r.Len(), maxHeld+maxBuffer, "%s: read no more than the bounds", name)
	}
}

// TestDecoderCloseRemovesSpool checks that a consumer that stops inside a
// long line, data first, leaves no temporary file.
func TestDecoderCloseRemovesSpool(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	r, _ := hugeLine(4<<20, true)
	d := NewDecoder(r, nil, "s", "c")
	_, err := d.Next()
	require.NoError(t, err)
	require.NotNil(t, d.long.spool.file, "the data waits in a file")
	d.Close()
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	assert.Empty(t, left)
}
