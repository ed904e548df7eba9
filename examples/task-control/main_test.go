package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/workload"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestTaskControl(t *testing.T) {
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	env := Env{
		NewClient:  func(opts ...sandbox.Option) (*sandbox.Client, error) { return srv.Client(opts...), nil },
		Inactivity: 500 * time.Millisecond,
	}
	store := &Store{Path: filepath.Join(t.TempDir(), "tasks.json")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, env, store), out.String())
	s := out.String()

	// 1. Stopped from another process within 2 s; idempotent; marked
	// stopped although terminating failed.
	m := regexp.MustCompile(`the task ended (\S+) after the stop request: TASK_STOPPED \(within 2 s: true\)`).FindStringSubmatch(s)
	require.NotNil(t, m, s)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	assert.Less(t, d, 2*time.Second)
	assert.Contains(t, s, "task task-1 marked stopped; sandbox: stopped")
	assert.Contains(t, s, "task task-1 marked stopped; sandbox: already_stopped")
	assert.Contains(t, s, "store: task task-2 status=stopped stopError=SANDBOX_STOP_FAILED")
	rec, err := store.Get("task-1")
	require.NoError(t, err)
	assert.Equal(t, "stopped", rec.Status)
	assert.True(t, rec.StopRequested)
	assert.Equal(t, string(workload.AlreadyStopped), rec.StopOutcome)

	// 2. Inactivity.
	assert.Contains(t, s, "AGENT_INACTIVE; sandbox stopped: true")
	// 3. Deadline: the follow-up step never ran.
	assert.Contains(t, s, "long step: SANDBOX_TIMEOUT")
	assert.Contains(t, s, "follow-up step: TASK_ENDED (ran: false)")
	assert.Contains(t, s, "sandbox after the deadline: stopped")
	for _, c := range srv.Commands() {
		assert.NotContains(t, c.Command.Args, "published.txt")
	}
	// 4. Reuse or recreate.
	assert.Regexp(t, `round 1: probe not_found -> created`, s)
	assert.Regexp(t, `round 2: probe healthy -> reused`, s)
	assert.Regexp(t, `round 3: probe stopped -> resumed`, s)

	for _, sess := range srv.Sessions() {
		assert.NotEqual(t, "running", sess.Status, "session %s left running", sess.ID)
	}
	// Every long command was killed, none ran to its end.
	for _, c := range srv.Commands() {
		if c.Command.ExitCode != nil && *c.Command.ExitCode != 0 {
			assert.Contains(t, []string{"137", "143"}, strconv.Itoa(*c.Command.ExitCode), "%v", c.Command.Args)
		}
	}
}

func TestConnectLocal(t *testing.T) {
	var log bytes.Buffer
	env, closeFn, err := connect(context.Background(), &log, true)
	require.NoError(t, err)
	defer closeFn()
	c, err := env.NewClient()
	require.NoError(t, err)
	assert.NotNil(t, c)
	assert.Contains(t, log.String(), "embedded local server")
	assert.Contains(t, log.String(), "without isolation")
}
