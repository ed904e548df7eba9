package cmdstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

func TestDecoderAttachedStream(t *testing.T) {
	t.Parallel()
	body := `{"command":{"id":"cmd_1","name":"echo","args":["hi"],"cwd":"/v","sessionId":"sbx_1","exitCode":null,"startedAt":1}}
{"stream":"stdout","data":"hi\n"}

{"stream":"stderr","data":"\u00e9\n"}
{"command":{"id":"cmd_1","name":"echo","args":["hi"],"cwd":"/v","sessionId":"sbx_1","exitCode":0,"durationMs":4,"startedAt":1}}
`
	d := NewDecoder(strings.NewReader(body), nil, "sbx_1", "")
	f, err := d.Next()
	require.NoError(t, err)
	require.Equal(t, KindCommand, f.Kind)
	assert.Nil(t, f.Command.ExitCode)
	f, err = d.Next()
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: KindStdout, Data: []byte("hi\n")}, f)
	f, err = d.Next()
	require.NoError(t, err)
	assert.Equal(t, Frame{Kind: KindStderr, Data: []byte("é\n")}, f)
	f, err = d.Next()
	require.NoError(t, err)
	require.Equal(t, KindCommand, f.Kind)
	assert.Equal(t, 0, *f.Command.ExitCode)
	_, err = d.Next()
	assert.Equal(t, io.EOF, err)
}

func TestDecoderErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"stream":"error","data":{"code":"sandbox_stream_closed","message":"closed"}}`: "sandbox_stream_closed",
		`{"stream":"error","data":"text"}`:                                              "stream_error",
		`{"stream":"stdout","data":{"x":1}}`:                                            "malformed_frame",
		`{"stream":"other","data":"x"}`:                                                 "malformed_frame",
		`not json`:                                                                      "malformed_frame",
	}
	for line, code := range cases {
		d := NewDecoder(strings.NewReader(line+"\n"), nil, "sbx_1", "cmd_1")
		_, err := d.Next()
		var se *apierr.StreamError
		require.ErrorAs(t, err, &se, line)
		assert.Equal(t, code, se.Code, line)
		assert.Equal(t, "cmd_1", se.CommandID)
	}
}

func TestDecoderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	d := NewDecoder(io.MultiReader(strings.NewReader(`{"stream":"stdout","data":"a"}`+"\n"), errReader{boom}), nil, "s", "c")
	_, err := d.Next()
	require.NoError(t, err)
	_, err = d.Next()
	assert.ErrorIs(t, err, apierr.ErrStreamEnded)
	assert.ErrorIs(t, err, boom)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// FuzzDecoder checks the decoder against decoding the lines one by one
// with encoding/json: the same frames, then the same error or the end.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte(`{"command":{"id":"c","exitCode":null}}` + "\n" + `{"stream":"stdout","data":"x"}` + "\n"))
	f.Add([]byte(`{"stream":"error","data":{"code":"a"}}`))
	f.Add([]byte("\n\n{}\n"))
	f.Add([]byte(`{"data":"a\nb\"c\\d\u00e9\ud83d\ude00","stream":"stdout"}` + "\r\n" + ` { "stream" : "stderr" , "data" : "\t" } `))
	f.Add([]byte(`{"data":"x","stream":"stdout","extra":1}` + "\n" + `{"data":"\x","stream":"stdout"}`))
	f.Add([]byte(`{"data":"a\n","stream":"stdout"}` + "\n" + `{"data":"é\"\\","stream":"stderr"}` + "\r\n" + `{"data":"b","stream":"stdout"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(bytes.NewReader(data), nil, "s", "c")
		var got []Frame
		for {
			fr, err := d.Next()
			if err == io.EOF {
				sameFrames(t, data, got, nil)
				return
			}
			if err != nil {
				sameFrames(t, data, got, err)
				return
			}
			switch fr.Kind {
			case KindCommand:
				if fr.Command == nil {
					t.Fatal("command frame without command")
				}
			case KindStdout, KindStderr:
			default:
				t.Fatalf("unknown kind %d", fr.Kind)
			}
			fr.Data = bytes.Clone(fr.Data) // valid until the next call
			got = append(got, fr)
		}
	})
}

// FuzzFastLog checks that the fast path for log lines agrees with
// encoding/json whenever it accepts a line.
func FuzzFastLog(f *testing.F) {
	for _, s := range []string{"hi\\n", "tab\\there", "q\\\"x\\\\y\\/", "é", "\\u00e9", "\\ud83d\\ude00", "a\\", "\\b\\f\\r", "\xff", "\x01"} {
		f.Add([]byte(`{"stream":"stdout","data":"` + s + `"}`))
		f.Add([]byte(`{"data":"` + s + `","stream":"stderr"}`))
	}
	f.Add([]byte(` { "data" : "x" , "stream" : "stdout" } `))
	f.Add([]byte(`{"data":"x","stream":"stdout","data":"y"}`))
	f.Add([]byte(`{"DATA":"x","stream":"stdout"}`))
	f.Add([]byte(`{"Stream":"stdout","data":"x"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		agreeWithFastLog(t, line)
		if !agreeWithGeneral(t, line) {
			return
		}
		var w struct {
			Stream string `json:"stream"`
			Data   string `json:"data"`
		}
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatalf("fast path accepted invalid JSON %q: %v", line, err)
		}
	})
}

func TestFastLogMatchesJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "line\\n", "x\\\"y", "\\u0041", "tail\\"} {
		line := []byte(`{"stream":"stderr","data":"` + s + `"}`)
		d := NewDecoder(strings.NewReader(string(line)+"\n"), nil, "s", "c")
		fr, err := d.Next()
		var w struct{ Data string }
		jerr := json.Unmarshal(line, &w)
		if jerr != nil {
			assert.Error(t, err, s)
			continue
		}
		require.NoError(t, err, s)
		assert.Equal(t, w.Data, string(fr.Data), s)
	}
}

// TestFastLogKeyOrders checks that both key orders, and spacing, take the
// fast path: hosted Vercel writes data first.
func TestFastLogKeyOrders(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`{"stream":"stdout","data":"hi\n"}`,
		`{"data":"hi\n","stream":"stdout"}`,
		` { "data" : "hi\n" , "stream" : "stdout" } `,
	} {
		fr, ok := fastFrame([]byte(line))
		require.True(t, ok, line)
		assert.Equal(t, KindStdout, fr.Kind, line)
		assert.Equal(t, "hi\n", string(fr.Data), line)
	}
	for _, line := range []string{
		`{"data":"x"}`,
		`{"stream":"stdout"}`,
		`{"data":"x","stream":"stdout","data":"y"}`,
		`{"data":"x","stream":"error"}`,
		`{"data":"x","stream":"stdout","extra":1}`,
		`{"data":"x","stream":"stdout"}x`,
	} {
		_, ok := fastFrame([]byte(line))
		assert.False(t, ok, line)
	}
}

// membersRef is the reference for members: encoding/json's tokenizer.
func membersRef(line []byte) ([]string, []string, error) {
	var keys, values []string
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("not an object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, values = append(keys, t.(string)), append(values, string(v))
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("text after")
	}
	return keys, values, nil
}

// FuzzMembers checks that members splits a line as encoding/json does,
// and refuses it exactly when encoding/json does.
func FuzzMembers(f *testing.F) {
	f.Add([]byte(`{"command":{"id":"c","exitCode":null},"x":[1,"}"],"d\u0061ta":"s"}`))
	f.Add([]byte(` { } `))
	f.Add([]byte(`{"a":1}x`))
	f.Add([]byte(`{"a":[1,2}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var keys, values []string
		err := members(line, func(k []byte, v json.RawMessage) error {
			if !json.Valid(v) { // the caller's check, for "command"
				return errors.New("invalid value")
			}
			keys, values = append(keys, string(k)), append(values, string(v))
			return nil
		})
		wantKeys, wantValues, wantErr := membersRef(line)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, want %v", line, err, wantErr)
		}
		if err == nil && (!reflect.DeepEqual(keys, wantKeys) || !reflect.DeepEqual(values, wantValues)) {
			t.Fatalf("%q: %q %q, want %q %q", line, keys, values, wantKeys, wantValues)
		}
	})
}

// TestClosedDecoderKeepsOffThePool checks what a careless caller meets
// after Close: Next fails instead of reading the buffer Close gave back,
// which another decoder may be using; a second Close is harmless, and the
// other decoder's frames stay whole.
func TestClosedDecoderKeepsOffThePool(t *testing.T) {
	t.Parallel()
	line := func(s string) string { return `{"data":"` + s + `","stream":"stdout"}` + "\n" }
	a := NewDecoder(strings.NewReader(line("a1")+line("a2")), nil, "s", "c")
	fr, err := a.Next()
	require.NoError(t, err)
	require.Equal(t, "a1", string(fr.Data))
	a.Close()
	a.Close()
	for range 8 { // whichever decoder gets a's buffer
		b := NewDecoder(strings.NewReader(line("b1")+line("b2")), nil, "s", "c")
		_, err = a.Next()
		require.ErrorIs(t, err, errClosed)
		for _, want := range []string{"b1", "b2"} {
			fr, err := b.Next()
			require.NoError(t, err)
			require.Equal(t, want, string(fr.Data))
		}
		b.Close()
	}
	k, data, c, err := a.NextParts()
	assert.Zero(t, k)
	assert.Nil(t, data)
	assert.Nil(t, c)
	assert.ErrorIs(t, err, errClosed)
}
