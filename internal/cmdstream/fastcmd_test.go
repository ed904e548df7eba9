package cmdstream

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// commandAgrees checks that, when fastCommand takes line, the general path
// (encoding/json) decodes it to the same command; it reports whether
// fastCommand took it.
func commandAgrees(t *testing.T, line []byte) bool {
	t.Helper()
	orig := bytes.Clone(line)
	got := fastCommand(line)
	if !bytes.Equal(line, orig) {
		t.Fatalf("fastCommand changed the line %q to %q", orig, line)
	}
	if got == nil {
		return false
	}
	want, err := (&Decoder{}).general(line)
	if err != nil {
		t.Fatalf("fast path took %q, which the general path refuses: %v", line, err)
	}
	if want.Kind != KindCommand || !reflect.DeepEqual(got, want.Command) {
		t.Fatalf("%q: fast path gives %+v, general path %+v", line, got, want.Command)
	}
	return true
}

var commandLines = []struct {
	line string
	fast bool
}{
	// What the API and the local backend send.
	{`{"command":{"id":"cmd_1","name":"echo","args":["hi"],"cwd":"/vercel/sandbox","sessionId":"sbx_abc","exitCode":null,"startedAt":1767000001000}}`, true},
	{`{"command":{"id":"cmd_1","name":"echo","args":["hi"],"cwd":"/vercel/sandbox","sessionId":"sbx_abc","exitCode":0,"durationMs":4,"startedAt":1767000001000}}`, true},
	{` {"command": { "exitCode" : -1 , "args" : [ ] } } ` + "\r", true},
	{`{"command":{}}`, true},
	{`{"command":{"args":null,"durationMs":null,"name":null,"startedAt":null}}`, true},
	{`{"command":{"args":["a\"b","c\\d\n",null,""]}}`, true},
	{`{"command":{"id":"é ✓","status":"running","pid":12,"ratio":-1.5e+3,"ok":true,"gone":false,"x":null}}`, true},
	{`{"command":{"extra":"a","extra":"b"}}`, true},
	// Left to the general path.
	{`{"command":{"ID":"x"}}`, false},          // encoding/json folds case
	{`{"command":{"Exitcode":3}}`, false},      // likewise
	{`{"command":{"ſessionId":"x"}}`, false},   // and folds ſ onto s
	{`{"command":{"id":"a","id":"b"}}`, false}, // repeated
	{`{"command":{"i\u0064":"a"}}`, false},     // escaped key
	{`{"command":{"id":"\u00e9"}}`, false},     // \u escape
	{`{"command":{"exitCode":1.0}}`, false},    // not an integer
	{`{"command":{"exitCode":1e2}}`, false},    // likewise
	{`{"command":{"startedAt":1234567890123456789}}`, false},
	{`{"command":{"exitCode":"1"}}`, false}, // a string for a number
	{`{"command":{"args":"a"}}`, false},     // a string for an array
	{`{"command":{"args":[1]}}`, false},     // a number in the array
	{`{"command":{"x":{"y":1}}}`, false},    // a nested unknown value
	{`{"command":{"x":[1]}}`, false},        // likewise
	{`{"command":{"id":"a"},"stream":"stdout"}`, false},
	{`{"command":null}`, false},
	{`{"command":{"id":"a"}}x`, false},
	{`{"command":{"id":"a",}}`, false},
	{`{"command":{"id":"a"}`, false},
	{`{"command":{"exitCode":01}}`, false},
	{`{"command":{"exitCode":-}}`, false},
	{`{"command":{"x":tru}}`, false},
	{`{"command":{"x":nullx}}`, false},
	{"{\"command\":{\"id\":\"\xff\"}}", false},
	{`{"data":"x","stream":"stdout"}`, false},
	{`{ "command":{}}`, false},    // the exact opening only
	{"{\"command\":{\n}}", false}, // a newline, which ends the general path's value
}

// TestFastCommandTable checks which command lines the fast path takes, and
// that what it takes decodes as the general path decodes it.
func TestFastCommandTable(t *testing.T) {
	t.Parallel()
	for _, c := range commandLines {
		assert.Equal(t, c.fast, commandAgrees(t, []byte(c.line)), "fast path for %s", c.line)
	}
	c := fastCommand([]byte(commandLines[1].line))
	require.NotNil(t, c)
	code, ms := 0, int64(4)
	assert.Equal(t, &wire.Command{ID: "cmd_1", Name: "echo", Args: []string{"hi"}, Cwd: "/vercel/sandbox",
		SessionID: "sbx_abc", ExitCode: &code, DurationMs: &ms, StartedAt: 1767000001000}, c)
}

// FuzzFastCommand checks that whatever command line the fast path takes,
// the general path decodes to the same command, and that the fast path
// never changes the line.
func FuzzFastCommand(f *testing.F) {
	for _, c := range commandLines {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		commandAgrees(t, line)
	})
}

// BenchmarkFastCommand decodes the last line of an attached run.
func BenchmarkFastCommand(b *testing.B) {
	line := []byte(commandLines[1].line)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if fastCommand(line) == nil {
			b.Fatal("slow path")
		}
	}
}

// BenchmarkGeneralCommand is BenchmarkFastCommand through the general path.
func BenchmarkGeneralCommand(b *testing.B) {
	line := []byte(commandLines[1].line)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := (&Decoder{}).general(line); err != nil {
			b.Fatal(err)
		}
	}
}
