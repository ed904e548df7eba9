package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runArgs runs the program with args and stdin and decodes its output.
func runArgs(t *testing.T, stdin string, args ...string) (int, Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code, err := run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	require.NoError(t, err, errOut.String())
	var res Result
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.GreaterOrEqual(t, res.ExecutionTimeMs, int64(0))
	assert.NotEmpty(t, res.Executor)
	return code, res
}

func needNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
}

// needIsolation skips a test of what only the isolated executor enforces
// (memory limits, a file system of its own) where bubblewrap cannot run.
func needIsolation(t *testing.T) {
	t.Helper()
	exe, mode := isolated.Best()
	iso, ok := exe.(*isolated.Executor)
	if !ok {
		t.Skip("the host executor enforces no isolation: " + mode)
	}
	require.NoError(t, iso.Close())
}

func TestDemo(t *testing.T) {
	code, res := runArgs(t, "")
	assert.Equal(t, 0, code)
	assert.True(t, res.OK, "%+v", res.Error)
	assert.NotEmpty(t, res.Value)
}

func TestJS(t *testing.T) {
	needNode(t)
	for _, tc := range []struct {
		name, code string
		args       []string
		wantType   string
		wantValue  string
		wantMsg    string
		isolated   bool // the case needs the isolated executor
	}{
		{name: "value", code: `console.log("hi"); ({a: [1, 2], b: "x"})`, wantValue: `{"a":[1,2],"b":"x"}`},
		{name: "promise", code: `Promise.resolve(6 * 7)`, wantValue: `42`},
		{name: "undefined", code: `let x = 1`, wantValue: `null`},
		{name: "syntax", code: `let x = ;`, wantType: SyntaxError, wantMsg: "Unexpected token"},
		{name: "runtime", code: `null.x`, wantType: RuntimeError, wantMsg: "Cannot read properties of null"},
		{name: "rejected", code: `Promise.reject(new Error("nope"))`, wantType: RuntimeError, wantMsg: "nope"},
		{name: "not JSON", code: `({toJSON() { throw new Error("no") }})`, wantType: RuntimeError, wantMsg: "not JSON-serialisable"},
		{name: "timeout", code: `while (true) {}`, args: []string{"-timeout", "1s"}, wantType: TimeoutError},
		{name: "memory", code: `const a = []; while (true) a.push(new Array(1e6).fill(1))`, args: []string{"-memory", "128"},
			wantType: MemoryError, isolated: true},
		{name: "no host files", code: `require("fs").readdirSync("/").filter(n => !["bin","dev","etc","home","lib","lib32","lib64","libx32","proc","root","run","sbin","shared","tmp","usr","vercel"].includes(n))`,
			wantValue: `[]`, isolated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.isolated {
				needIsolation(t)
			}
			code, res := runArgs(t, "", append([]string{"-lang", "js", "-code", tc.code}, tc.args...)...)
			if tc.wantType == "" {
				assert.Equal(t, 0, code)
				require.True(t, res.OK, "%+v %s", res.Error, res.Stderr)
				assert.JSONEq(t, tc.wantValue, string(res.Value))
				return
			}
			assert.Equal(t, 1, code)
			assert.False(t, res.OK)
			require.NotNil(t, res.Error, res.Stderr)
			assert.Equal(t, tc.wantType, res.Error.Type, "%s\n%s", res.Error.Message, res.Stderr)
			assert.Contains(t, res.Error.Message, tc.wantMsg)
		})
	}
}

func TestJSOutputAndTimeMeasured(t *testing.T) {
	needNode(t)
	code, res := runArgs(t, `const t = Date.now(); while (Date.now() - t < 300) {} ; console.log("done"); 1`, "-lang", "js")
	assert.Equal(t, 0, code)
	assert.Equal(t, "done\n", res.Stdout)
	assert.GreaterOrEqual(t, res.ExecutionTimeMs, int64(300))
}

func TestShell(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		args       []string
		wantType   string
		wantValue  string
	}{
		{name: "json", code: `echo '{"n": 3}'`, wantValue: `{"n":3}`},
		{name: "text", code: `echo hello`, wantValue: `"hello"`},
		{name: "syntax", code: `if then fi (`, wantType: SyntaxError},
		{name: "runtime", code: `echo oops >&2; exit 3`, wantType: RuntimeError},
		{name: "timeout", code: `while :; do :; done`, args: []string{"-timeout", "1s"}, wantType: TimeoutError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, res := runArgs(t, tc.code, append([]string{"-lang", "sh"}, tc.args...)...)
			if tc.wantType == "" {
				assert.Equal(t, 0, code)
				require.True(t, res.OK, "%+v", res.Error)
				assert.JSONEq(t, tc.wantValue, string(res.Value))
				return
			}
			assert.Equal(t, 1, code)
			require.NotNil(t, res.Error)
			assert.Equal(t, tc.wantType, res.Error.Type, res.Error.Message)
			assert.NotEmpty(t, res.Error.Message)
		})
	}
}

func TestShellMemory(t *testing.T) {
	// Only the isolated executor limits memory; on the host the 400 MB
	// line would only meet the local server's output budget.
	needIsolation(t)
	code, res := runArgs(t, `head -c 400000000 /dev/zero | tail -n 1`, "-lang", "sh", "-memory", "64")
	assert.Equal(t, 1, code)
	require.NotNil(t, res.Error)
	assert.Equal(t, MemoryError, res.Error.Type, res.Stderr)
}

func TestBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{{"-lang", "ruby"}, {"-timeout", "-1s"}, {"-memory", "0"}, {"extra"}} {
		code, err := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
		assert.Error(t, err, args)
		assert.Equal(t, 2, code)
	}
}
