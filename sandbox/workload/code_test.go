package workload_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestCodeInputValidate(t *testing.T) {
	cases := []struct {
		in    workload.CodeInput
		field string
	}{
		{workload.CodeInput{}, "code:"},
		{workload.CodeInput{Code: "  \n"}, "code:"},
		{workload.CodeInput{Code: "x", TimeoutMs: 99}, "timeoutMs:"},
		{workload.CodeInput{Code: "x", TimeoutMs: 300001}, "timeoutMs:"},
		{workload.CodeInput{Code: "x", TimeoutMs: -5}, "timeoutMs:"},
		{workload.CodeInput{Code: "x", VCPUs: 3}, "vcpus:"},
		{workload.CodeInput{Code: "x", VCPUs: 10}, "vcpus:"},
		{workload.CodeInput{Code: "x", VCPUs: -1}, "vcpus:"},
		{workload.CodeInput{Code: "x", VCPUs: 2, MemoryMB: 2048}, "memoryMb:"},
		{workload.CodeInput{Code: "x", MemoryMB: 2048}, "memoryMb:"},
	}
	for _, c := range cases {
		err := c.in.Validate()
		require.Error(t, err, "%+v", c.in)
		assert.ErrorIs(t, err, workload.ErrInvalidInput)
		var we *workload.Error
		require.ErrorAs(t, err, &we)
		assert.True(t, strings.HasPrefix(we.Message, c.field), "%q names %s", we.Message, c.field)
	}
	for _, ok := range []workload.CodeInput{
		{Code: "x"},
		{Code: "x", TimeoutMs: 100, VCPUs: 1, MemoryMB: 2048},
		{Code: "x", TimeoutMs: 300000, VCPUs: 8, MemoryMB: 16384},
	} {
		assert.NoError(t, ok.Validate(), "%+v", ok)
	}
}

func localExecutor(t *testing.T, limit int) (*sandboxtest.Server, *workload.CodeExecutor) {
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	return srv, &workload.CodeExecutor{
		Runner:          &workload.Runner{Client: newClient(t, srv)},
		DefaultLanguage: "sh",
		OutputLimit:     limit,
	}
}

func TestExecuteCode(t *testing.T) {
	t.Setenv("WORKLOAD_HOST_SECRET", "hunter2")
	srv, x := localExecutor(t, 1000)
	ctx := context.Background()

	t.Run("ok", func(t *testing.T) {
		// Quotes, $ and backquotes reach the interpreter as written: the
		// code is a file, never a shell line.
		res, err := x.Execute(ctx, workload.CodeInput{Code: "echo 'it''s $HOME `x`' | tr a-z A-Z\necho err >&2\n"})
		require.NoError(t, err)
		assert.True(t, res.OK)
		assert.Equal(t, "ITS $HOME `X`\n", res.Stdout)
		assert.Equal(t, "err\n", res.Stderr)
		require.NotNil(t, res.ExitCode)
		assert.Equal(t, 0, *res.ExitCode)
		assert.False(t, res.Truncated)
	})
	t.Run("thrown error", func(t *testing.T) {
		res, err := x.Execute(ctx, workload.CodeInput{Code: "echo 'Error: boom' >&2\nexit 3\n"})
		require.NoError(t, err, "code that fails is a result, not an error")
		assert.False(t, res.OK)
		require.NotNil(t, res.ExitCode)
		assert.Equal(t, 3, *res.ExitCode)
		assert.Contains(t, res.Stderr, "Error: boom")
		assert.Nil(t, res.Error)
	})
	t.Run("infinite loop times out", func(t *testing.T) {
		start := time.Now()
		res, err := x.Execute(ctx, workload.CodeInput{Code: "echo start\nwhile :; do :; done\n", TimeoutMs: 300})
		require.NoError(t, err)
		assert.True(t, res.TimedOut)
		assert.False(t, res.OK)
		assert.Equal(t, "start\n", res.Stdout)
		assert.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("truncated", func(t *testing.T) {
		res, err := x.Execute(ctx, workload.CodeInput{Code: "i=0; while [ $i -lt 500 ]; do echo 0123456789; i=$((i+1)); done\n"})
		require.NoError(t, err)
		assert.True(t, res.OK)
		assert.True(t, res.Truncated)
		assert.True(t, res.StdoutTruncated)
		assert.Len(t, res.Stdout, 1000)
	})
	t.Run("host environment is not passed", func(t *testing.T) {
		require.Equal(t, "hunter2", os.Getenv("WORKLOAD_HOST_SECRET"))
		res, err := x.Execute(ctx, workload.CodeInput{Code: "env\n"})
		require.NoError(t, err)
		assert.NotContains(t, res.Stdout, "WORKLOAD_HOST_SECRET")
		assert.NotContains(t, res.Stdout, "hunter2")
	})
	t.Run("invalid input", func(t *testing.T) {
		n := len(srv.Sessions())
		res, err := x.Execute(ctx, workload.CodeInput{Code: "x", Language: "cobol"})
		assert.ErrorIs(t, err, workload.ErrInvalidInput)
		require.NotNil(t, res.Error)
		assert.Equal(t, workload.CodeInvalidInput, res.Error.Code)
		assert.Contains(t, res.Error.Message, "language")
		assert.Len(t, srv.Sessions(), n, "no sandbox was created")
	})
	assert.Equal(t, 0, runningSessions(srv), "every sandbox was disposed of")
	assert.Len(t, srv.Sessions(), 5)
}

func TestExecuteCodeRunsFile(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchArgs("node", "main.mjs"), sandboxtest.Reply{Stdout: "42\n"})
	x := &workload.CodeExecutor{Runner: &workload.Runner{Client: newClient(t, srv)}}
	code := `console.log("$(rm -rf /)")`
	res, err := x.Execute(context.Background(), workload.CodeInput{Code: code, VCPUs: 2, MemoryMB: 4096})
	require.NoError(t, err)
	assert.True(t, res.OK)
	calls := srv.Script().Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"main.mjs"}, calls[0].Args)
	assert.Empty(t, calls[0].Env)
	sbs := srv.Sandboxes()
	require.Len(t, sbs, 1)
	assert.Equal(t, "node24", sbs[0].Runtime)
	assert.Equal(t, 2, sbs[0].VCPUs)
	got, err := os.ReadFile(mustHostPath(t, srv, sbs[0].Name, "main.mjs"))
	require.NoError(t, err)
	assert.Equal(t, code, string(got))

	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.JSONEq(t, `{"ok":true,"stdout":"42\n","stderr":"","exitCode":0,"durationMs":`+jsonInt(res.DurationMs)+`,"truncated":false,"timedOut":false}`, string(b))
}

func TestExecuteCodeScriptedTimeout(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("node"), sandboxtest.Steps{}.Stdout("working\n").Block())
	x := &workload.CodeExecutor{Runner: &workload.Runner{Client: newClient(t, srv)}}
	res, err := x.Execute(context.Background(), workload.CodeInput{Code: "for(;;){}", TimeoutMs: 200})
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.False(t, res.OK)
	assert.Equal(t, 0, runningSessions(srv))
}

func mustHostPath(t *testing.T, srv *sandboxtest.Server, name, p string) string {
	t.Helper()
	hp, err := srv.HostPath(name, p)
	require.NoError(t, err)
	return hp
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
