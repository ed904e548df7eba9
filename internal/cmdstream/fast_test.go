package cmdstream

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// fastFrame is fastLog as a frame, and whether it took the line.
func fastFrame(line []byte) (Frame, bool) {
	k, data := fastLog(line)
	return Frame{Kind: k, Data: data}, k != 0
}

// agreeWithGeneral checks that, when fastLog accepts line, the general
// path (encoding/json) decodes it to the same frame; it reports whether
// fastLog accepted it.
func agreeWithGeneral(t *testing.T, line []byte) bool {
	t.Helper()
	fast, ok := fastFrame(bytes.Clone(line)) // it decodes in place
	if !ok {
		return false
	}
	want, err := (&Decoder{}).general(line)
	if err != nil {
		t.Fatalf("fast path accepted %q, which the general path refuses: %v", line, err)
	}
	if fast.Kind != want.Kind || !bytes.Equal(fast.Data, want.Data) {
		t.Fatalf("%q: fast path gives %d %q, general path %d %q", line, fast.Kind, fast.Data, want.Kind, want.Data)
	}
	return true
}

// agreeWithFastLog checks hostedLog on line, followed by a newline and
// more: when it takes the line, it takes the line and its newline alone,
// and fastLog gives the same frame; when it leaves it, the bytes are as
// they were. It reports whether hostedLog took the line.
func agreeWithFastLog(t *testing.T, line []byte) bool {
	t.Helper()
	b := append(bytes.Clone(line), "\n{\"data\":\"next\",\"stream\":\"stdout\"}\n"...)
	orig := bytes.Clone(b)
	k, data, n := hostedLog(b)
	if k == 0 {
		if !bytes.Equal(b, orig) {
			t.Fatalf("%q: hostedLog left the line but changed it to %q", line, b)
		}
		return false
	}
	if n != len(line)+1 {
		t.Fatalf("%q: hostedLog took %d bytes, want %d", line, n, len(line)+1)
	}
	if !bytes.Equal(b[n:], orig[n:]) {
		t.Fatalf("%q: hostedLog changed the bytes after the line", line)
	}
	want, ok := fastFrame(bytes.Clone(line))
	if !ok || want.Kind != k || !bytes.Equal(want.Data, data) {
		t.Fatalf("%q: hostedLog gives %d %q, fastLog %d %q (took it: %v)", line, k, data, want.Kind, want.Data, ok)
	}
	return true
}

// TestHostedLog checks which lines take the path for hosted Vercel's
// exact form, and that the others are left as they were.
func TestHostedLog(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line   string
		hosted bool
	}{
		{`{"data":"plain","stream":"stdout"}`, true},
		{`{"data":"","stream":"stderr"}`, true},
		{`{"data":"a\nb\tc\"d\\e\/","stream":"stdout"}`, true},
		{`{"data":"é ✓ 😀","stream":"stderr"}`, true},
		{`{"data":"` + strings.Repeat("0123456789abcdef", 300) + `\n","stream":"stdout"}`, true},
		{`{"data":"x","stream":"stdout"} `, false},
		{`{"data":"x","stream":"stdout"}` + "\r", false},
		{`{"data": "x","stream":"stdout"}`, false},
		{` {"data":"x","stream":"stdout"}`, false},
		{`{"stream":"stdout","data":"x"}`, false},
		{`{"data":"x";"stream":"stdout"}`, false},
		{`{"data":"x","strean":"stdout"}`, false},
		{`{"data":"x","stream"="stderr"}`, false},
		{`{"data":"x","stream":"stdoux"}`, false},
		{`{"data":"x","stream":"stdout"]`, false},
		{`{"data":"x","stream":"stderr"}` + "x", false},
		{`{"data":"x","stream":"error"}`, false},
		{`{"data":"x","stream":"stdout","x":1}`, false},
		{`{"data":"\u00e9","stream":"stdout"}`, false},
		{`{"data":"\x","stream":"stdout"}`, false},
		{"{\"data\":\"\xff\",\"stream\":\"stdout\"}", false},
		{"{\"data\":\"tab\there\",\"stream\":\"stdout\"}", false},
		{`{"data":"x","stream":"stdout"`, false},
		{`{"data":"x`, false},
		{`{"data`, false},
	} {
		assert.Equal(t, c.hosted, agreeWithFastLog(t, []byte(c.line)), c.line)
	}
	// A line not whole in the buffer is left for later.
	for _, line := range []string{`{"data":"x","stream":"stdout"}`, `{"data":"` + strings.Repeat("y", 100) + `","stream":"stderr"}`} {
		for end := 0; end <= len(line); end++ {
			b := []byte(line[:end])
			k, _, _ := hostedLog(b)
			assert.Zero(t, k, "%q", b)
			assert.Equal(t, line[:end], string(b))
		}
	}
}

// TestFastLogTable decodes single lines through the Decoder: which take
// the fast path, and what each gives.
func TestFastLogTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line string
		fast bool   // whether fastLog takes it
		kind Kind   // the frame's kind, for a frame
		data string // the frame's data, for a frame
		code string // the error's code, for an error
	}{
		// Escapes.
		{line: `{"data":"plain","stream":"stdout"}`, fast: true, kind: KindStdout, data: "plain"},
		{line: `{"data":"","stream":"stdout"}`, fast: true, kind: KindStdout, data: ""},
		{line: `{"data":"a\nb\tc\rd","stream":"stderr"}`, fast: true, kind: KindStderr, data: "a\nb\tc\rd"},
		{line: `{"data":"\"q\" \\ \/","stream":"stdout"}`, fast: true, kind: KindStdout, data: `"q" \ /`},
		{line: `{"data":"\b\f","stream":"stdout"}`, fast: true, kind: KindStdout, data: "\b\f"},
		{line: `{"data":"\\n","stream":"stdout"}`, fast: true, kind: KindStdout, data: `\n`},
		{line: `{"data":"\\\\\"","stream":"stdout"}`, fast: true, kind: KindStdout, data: `\\"`},
		{line: `{"data":"é ✓ 😀","stream":"stdout"}`, fast: true, kind: KindStdout, data: "é ✓ 😀"},
		{line: `{"data":"\u00e9","stream":"stdout"}`, kind: KindStdout, data: "é"},
		{line: `{"data":"\ud83d\ude00","stream":"stdout"}`, kind: KindStdout, data: "😀"},
		{line: `{"data":"\ud83d","stream":"stdout"}`, kind: KindStdout, data: "\uFFFD"},
		{line: `{"data":"\u0000x","stream":"stdout"}`, kind: KindStdout, data: "\x00x"},
		{line: "{\"data\":\"\xff\",\"stream\":\"stdout\"}", kind: KindStdout, data: "\uFFFD"},
		{line: `{"data":"\x","stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"data":"a\","stream":"stdout"}`, code: "malformed_frame"},
		{line: "{\"data\":\"tab\there\",\"stream\":\"stdout\"}", code: "malformed_frame"},
		{line: "{\"data\":\"nul\x00\",\"stream\":\"stdout\"}", code: "malformed_frame"},
		// Key orders, whitespace, unknown and repeated keys.
		{line: `{"stream":"stdout","data":"x"}`, fast: true, kind: KindStdout, data: "x"},
		{line: " \t{ \"data\" :\r\"x\" , \"stream\" : \"stderr\" }\t ", fast: true, kind: KindStderr, data: "x"},
		{line: `{"data":"x","stream":"stdout","extra":1}`, kind: KindStdout, data: "x"},
		{line: `{"extra":{"a":[1]},"data":"x","stream":"stdout"}`, kind: KindStdout, data: "x"},
		{line: `{"data":"x","stream":"stdout","data":"y"}`, code: "malformed_frame"},
		{line: `{"data":"x","stream":"stderr","stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"DATA":"x","Stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"Stream":"stdout","data":"x"}`, code: "malformed_frame"},
		{line: `{"stream":"stdout","Data":"x"}`, code: "malformed_frame"},
		{line: `{"d\u0061ta":"x","stream":"stdout"}`, kind: KindStdout, data: "x"},
		{line: `{"data":"x","stream":"std\u006fut"}`, kind: KindStdout, data: "x"},
		{line: `{"data":null,"stream":"stdout"}`, kind: KindStdout, data: ""},
		// Error frames, a command line, malformed frames.
		{line: `{"stream":"error","data":{"code":"sandbox_stream_closed","message":"closed"}}`, code: "sandbox_stream_closed"},
		{line: `{"data":{"message":"m","code":"c"},"stream":"error"}`, code: "c"},
		{line: `{"data":"x","stream":"error"}`, code: "stream_error"},
		{line: `{"command":{"id":"c","exitCode":0}}`, kind: KindCommand},
		{line: `{"data":"x"}`, code: "malformed_frame"},
		{line: `{"stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"data":"x","stream":"other"}`, code: "malformed_frame"},
		{line: `{"data":1,"stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"data":"x","stream":"stdout"}x`, code: "malformed_frame"},
		{line: `{"data":"x","stream":"stdout",}`, code: "malformed_frame"},
		{line: `{"data":"x" "stream":"stdout"}`, code: "malformed_frame"},
		{line: `{"data":"x","stream":"stdout"`, code: "malformed_frame"},
		{line: `{"data":"x`, code: "malformed_frame"},
		{line: `["data","x"]`, code: "malformed_frame"},
	} {
		assert.Equal(t, c.fast, agreeWithGeneral(t, []byte(c.line)), "fast path for %s", c.line)
		fr, err := NewDecoder(strings.NewReader(c.line+"\n"), nil, "s", "c").Next()
		if c.code != "" {
			var se *apierr.StreamError
			require.ErrorAs(t, err, &se, c.line)
			assert.Equal(t, c.code, se.Code, c.line)
			continue
		}
		require.NoError(t, err, c.line)
		assert.Equal(t, c.kind, fr.Kind, c.line)
		if c.kind != KindCommand {
			assert.Equal(t, c.data, string(fr.Data), c.line)
		}
	}
}

// TestFrameDataUntilNext checks that a frame's data is right until the
// next call: the decoder hands out slices of its buffer.
func TestFrameDataUntilNext(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	var want []string
	for i := 0; i < 2000; i++ {
		s := strings.Repeat(string(rune('a'+i%26)), i%300) + "\\n"
		body.WriteString(`{"data":"` + s + `","stream":"stdout"}` + "\n")
		want = append(want, strings.Repeat(string(rune('a'+i%26)), i%300)+"\n")
	}
	d := NewDecoder(strings.NewReader(body.String()), nil, "s", "c")
	var got []string
	for {
		fr, err := d.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, string(fr.Data))
	}
	assert.Equal(t, want, got)
}

// decodeLines is the reference for FuzzDecoder: the lines of data split,
// trimmed and decoded one by one by the general path, up to the first
// error.
func decodeLines(data []byte) ([]Frame, error) {
	var out []Frame
	d := &Decoder{sessionID: "s", commandID: "c"}
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = trimEOL(l)
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		f, err := d.general(l)
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
	return out, nil
}

// sameFrames checks a decoded stream against decodeLines.
func sameFrames(t *testing.T, data []byte, got []Frame, gotErr error) {
	t.Helper()
	want, wantErr := decodeLines(data)
	if len(got) != len(want) {
		t.Fatalf("%q: %d frames, want %d", data, len(got), len(want))
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || !bytes.Equal(got[i].Data, want[i].Data) || !reflect.DeepEqual(got[i].Command, want[i].Command) {
			t.Fatalf("%q: frame %d is %+v, want %+v", data, i, got[i], want[i])
		}
	}
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, want %v", data, gotErr, wantErr)
	}
	var se *apierr.StreamError
	if gotErr != nil && !errors.As(gotErr, &se) {
		t.Fatalf("untyped error %T %v", gotErr, gotErr)
	}
}

// TestPlainRunMatchesTable checks the word-at-a-time scan against the
// byte tables, for every byte at every position of a word.
func TestPlainRunMatchesTable(t *testing.T) {
	t.Parallel()
	for _, plain := range []*[256]uint8{&plainASCII, &plainAll} {
		for c := 0; c < 256; c++ {
			for pos := 0; pos < 80; pos++ {
				s := bytes.Repeat([]byte("a"), 80)
				s[pos] = byte(c)
				want := 0
				for want < len(s) && plain[s[want]] != 0 {
					want++
				}
				require.Equal(t, want, plainRun(s, plain), "byte %#x at %d", c, pos)
			}
		}
	}
}
