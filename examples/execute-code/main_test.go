package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func executor(t *testing.T, lang string) (*sandboxtest.Server, *workload.CodeExecutor) {
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	return srv, &workload.CodeExecutor{Runner: &workload.Runner{Client: srv.Client()}, DefaultLanguage: lang, OutputLimit: 1024}
}

// results splits the demo's output into its results, by name.
func results(t *testing.T, out string) map[string]workload.CodeResult {
	got := map[string]workload.CodeResult{}
	for _, part := range strings.Split(out, "== ")[1:] {
		name, rest, _ := strings.Cut(part, "\n")
		_, js, ok := strings.Cut(rest, "result: ")
		require.True(t, ok, part)
		var r workload.CodeResult
		require.NoError(t, json.Unmarshal([]byte(js), &r), js)
		got[name] = r
	}
	return got
}

func testDemo(t *testing.T, lang string) {
	srv, x := executor(t, lang)
	var out bytes.Buffer
	require.NoError(t, demo(context.Background(), x, lang, &out))
	got := results(t, out.String())
	require.Len(t, got, 5, out.String())

	ok := got["ok"]
	assert.True(t, ok.OK)
	assert.Equal(t, "1 + 1 = 2\n", ok.Stdout)
	require.NotNil(t, ok.ExitCode)
	assert.Equal(t, 0, *ok.ExitCode)

	thrown := got["thrown error"]
	assert.False(t, thrown.OK)
	require.NotNil(t, thrown.ExitCode)
	assert.Equal(t, 1, *thrown.ExitCode)
	assert.Contains(t, thrown.Stderr, "Error: boom")

	to := got["timeout"]
	assert.False(t, to.OK)
	assert.True(t, to.TimedOut)
	assert.Equal(t, "looping\n", to.Stdout)

	tr := got["truncation"]
	assert.True(t, tr.Truncated)
	assert.Len(t, tr.Stdout, 1024)

	inv := got["invalid input"]
	require.NotNil(t, inv.Error)
	assert.Equal(t, workload.CodeInvalidInput, inv.Error.Code)
	assert.Contains(t, inv.Error.Message, "vcpus")

	assert.Len(t, srv.Sessions(), 4, "one sandbox per run; none for invalid input")
	for _, s := range srv.Sessions() {
		assert.Equal(t, "stopped", s.Status, "every sandbox was disposed of")
	}
}

func TestDemoShell(t *testing.T) { testDemo(t, "sh") }

func TestDemoJavaScript(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	testDemo(t, "javascript")
}

func TestRunOneInput(t *testing.T) {
	_, x := executor(t, "sh")
	var out bytes.Buffer
	require.NoError(t, runOne(context.Background(), x, strings.NewReader(`{"code":"echo \"$0\" \"$HOME\" | wc -w","timeoutMs":2000}`), &out))
	var r workload.CodeResult
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.True(t, r.OK)
	assert.Equal(t, "2\n", strings.TrimLeft(r.Stdout, " "))

	for _, bad := range []string{`not json`, `{"code":"x","timeout":5}`, `{"code":""}`, `{"code":"x","timeoutMs":50}`} {
		out.Reset()
		require.NoError(t, runOne(context.Background(), x, strings.NewReader(bad), &out))
		var r workload.CodeResult
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		assert.False(t, r.OK, bad)
		require.NotNil(t, r.Error, bad)
		assert.Equal(t, workload.CodeInvalidInput, r.Error.Code, bad)
	}
}

func TestConnectLocal(t *testing.T) {
	var log bytes.Buffer
	c, lang, closeFn, err := connect(context.Background(), &log, true)
	require.NoError(t, err)
	defer closeFn()
	assert.NotNil(t, c)
	assert.Contains(t, []string{"javascript", "sh"}, lang)
	assert.Contains(t, log.String(), "embedded local server")
	assert.Contains(t, log.String(), "without isolation")
}
