package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const cassetteFile = `{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}
{"seq":1,"request":{"method":"GET","path":"/v2/sandboxes/demo","query":{"teamId":["{{team}}"]}},"response":{"status":200,"header":{"content-type":"application/json"},"body":{"json":{"sandbox":{"name":"demo","currentSessionId":"{{session:1}}","createdAt":"{{time:+0}}"}}}}}
`

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServesCassette(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.cassette")
	require.NoError(t, os.WriteFile(path, []byte(cassetteFile), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{path}, pw, &stderr)
		pw.Close()
		done <- err
	}()
	out := bufio.NewReader(pr)
	first, err := out.ReadString('\n')
	require.NoError(t, err)
	base, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on ")
	require.True(t, ok, first)
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(out); rest <- string(b) }()

	resp, err := http.Get(base + "/api/v2/sandboxes/demo?teamId=team_mine")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), `"currentSessionId":"sbx_replay0000000000000000000001"`)

	resp, err = http.Get(base + "/v2/sandboxes/other?teamId=team_mine")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 500, resp.StatusCode)

	cancel()
	err = <-done
	require.Error(t, err, "a request matched nothing")
	assert.Contains(t, <-rest, "0 of 1 interactions not replayed")
	assert.Contains(t, stderr.String(), "- GET /v2/sandboxes/demo")
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), nil, io.Discard, &stderr)
	require.ErrorIs(t, err, cli.ErrUsage)
	assert.Contains(t, stderr.String(), "usage: cassette-replay")
	err = run(context.Background(), []string{filepath.Join(t.TempDir(), "missing")}, io.Discard, io.Discard)
	require.ErrorIs(t, err, os.ErrNotExist)
}
