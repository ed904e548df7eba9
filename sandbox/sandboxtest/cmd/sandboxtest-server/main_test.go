//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/internal/cli"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The server prints its address first, runs real processes, and on
// shutdown kills them, removes its directory and returns nil.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--token", "tok", "--executor", "host"}, pw, io.Discard)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	first, err := br.ReadString('\n')
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first, "listening on http://127.0.0.1:"), first)
	second, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(second, "executor: host (--executor host: local processes, not isolated") && strings.HasSuffix(second, ")\n"), second)
	base := strings.TrimSpace(strings.TrimPrefix(first, "listening on "))
	go func() { _, _ = io.Copy(io.Discard, br) }()

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	post := func(path, body string, out any) {
		req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	var created struct {
		Session struct{ ID, Cwd string } `json:"session"`
	}
	post("/api/v3/sandboxes", `{"projectId":"p","ports":[]}`, &created)
	assert.DirExists(t, created.Session.Cwd, "host-path mode: the cwd is a host directory")
	var started struct {
		Command struct{ ID string } `json:"command"`
	}
	post("/api/v2/sandboxes/sessions/"+created.Session.ID+"/cmd",
		`{"command":"sh","args":["-c","echo $$ > pid; exec sleep 1000"],"env":{},"sudo":false}`, &started)
	pidFile := created.Session.Cwd + "/pid"
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, 10*time.Second, 10*time.Millisecond)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)

	cancel() // as SIGINT or SIGTERM would
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after shutdown")
	}
	assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the sleep process is gone")
	assert.NoDirExists(t, created.Session.Cwd)
}

// The second line names the executor that --executor selected.
func TestRunExecutorFlag(t *testing.T) {
	iso, isoErr := isolated.New()
	mode := ""
	if isoErr == nil {
		mode = iso.Mode()
		_ = iso.Close()
	}
	for _, flagValue := range []string{"auto", "isolated"} {
		t.Run(flagValue, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"--executor", flagValue}, pw, io.Discard)
				pw.Close()
			}()
			br := bufio.NewReader(pr)
			first, _ := br.ReadString('\n')
			second, _ := br.ReadString('\n')
			go func() { _, _ = io.Copy(io.Discard, br) }()
			if base, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on "); ok {
				// Stop only once the server answers.
				hc := &http.Client{Transport: &http.Transport{}}
				assert.Eventually(t, func() bool {
					resp, err := hc.Get(base + "/v2/sandboxes")
					if err == nil {
						resp.Body.Close()
					}
					return err == nil
				}, 10*time.Second, 10*time.Millisecond)
				hc.CloseIdleConnections()
			}
			cancel()
			err := <-done
			switch {
			case isoErr == nil:
				require.NoError(t, err)
				assert.Contains(t, first, "listening on http://")
				assert.True(t, strings.HasPrefix(second, "executor: "+strings.TrimSuffix(mode, ")")), second)
			case flagValue == "auto":
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(second, "executor: host (") && strings.HasSuffix(second, ")\n"), second)
			default:
				assert.ErrorIs(t, err, isolated.ErrUnavailable)
			}
		})
	}
	err := run(context.Background(), []string{"--executor", "vm"}, io.Discard, io.Discard)
	assert.ErrorIs(t, err, cli.ErrUsage)
}

func TestExecutorLineSaysTheQuotaIsWatched(t *testing.T) {
	t.Parallel()
	const why = "disk quota watched, not held: no loop devices (/dev/loop-control)"
	assert.Equal(t, "isolated", withNote("isolated", ""))
	assert.Equal(t, "isolated ("+why+")", withNote("isolated", why))
	assert.Equal(t, "host (--executor host: local processes, not isolated; "+why+")",
		withNote("host (--executor host: local processes, not isolated)", why))
}
