package main

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
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

const secret = "sk-test-0123456789"

func localServer(t *testing.T) *sandboxtest.Server {
	return sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
}

func runLocal(t *testing.T, mode Mode) {
	srv := localServer(t)
	var out bytes.Buffer
	var got []AgentResult
	err := run(context.Background(), config{Client: srv.Client(), Mode: mode, Message: "what is a sandbox", Secret: secret,
		Out: &out, OnResult: func(r AgentResult) { got = append(got, r) }})
	require.NoError(t, err, out.String())
	s := out.String()
	for _, phase := range []string{"create: ok", "setup write agent: ok", "setup install ms (vendored): ok", "execute agent: ok", "stop: ok"} {
		assert.Contains(t, s, phase)
	}
	require.Len(t, got, 1)
	assert.True(t, got[0].SecretPresent, "the agent saw the secret")
	assert.Equal(t, 4, got[0].Usage.InputTokens)
	assert.Positive(t, got[0].Usage.OutputTokens)
	assert.Contains(t, s, "4 input + ")
	assert.NotContains(t, s, secret)

	// The secret was given to the agent command only.
	for _, c := range srv.Commands() {
		_, has := c.Env["AGENT_API_KEY"]
		isAgent := c.Command.Name == "node" || c.Command.Name == "sh" && len(c.Command.Args) == 1 && c.Command.Args[0] == "agent.sh"
		assert.Equal(t, isAgent, has, "%s %v", c.Command.Name, c.Command.Args)
	}
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/sandboxes") {
			assert.NotContains(t, string(r.Body), secret, "not in the sandbox's environment")
		}
	}
	for _, sess := range srv.Sessions() {
		assert.NotEqual(t, "running", sess.Status, "the sandbox was stopped")
	}
	if mode == LocalNode {
		assert.Contains(t, got[0].Text, "You said: what is a sandbox (4 words")
	} else {
		assert.Contains(t, got[0].Text, "4 words (sh agent)")
	}
}

func TestAgentShell(t *testing.T) { runLocal(t, LocalShell) }

func TestAgentNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	runLocal(t, LocalNode)
}

func TestAgentThroughConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var log bytes.Buffer
	c, mode, closeFn, err := connect(ctx, &log, true)
	require.NoError(t, err)
	defer closeFn()
	assert.Contains(t, log.String(), "embedded local server")
	assert.Contains(t, log.String(), "without isolation")
	var out bytes.Buffer
	require.NoError(t, run(ctx, config{Client: c, Mode: mode, Message: "hi", Secret: secret, Out: &out}), out.String())
	assert.Contains(t, out.String(), "stopped: true")
}

func TestAgentFailures(t *testing.T) {
	t.Run("creation", func(t *testing.T) {
		srv := sandboxtest.NewServer(t)
		fail := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
			if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/sandboxes") {
				return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
			}
			return next(req)
		}
		var out bytes.Buffer
		var attempts []int
		retry := sandbox.RetryPolicy{BaseDelay: time.Millisecond, OnRetry: func(ev sandbox.RetryEvent) { attempts = append(attempts, ev.Attempt) }}
		c := srv.Client(sandbox.WithMiddleware(fail), sandbox.WithRetryPolicy(retry))
		err := run(context.Background(), config{Client: c, Mode: Vercel, Message: "hi", Out: &out})
		assert.ErrorIs(t, err, workload.ErrCreationFailed)
		assert.Contains(t, out.String(), "create: SANDBOX_CREATION_FAILED")
		assert.Equal(t, []int{2, 3}, attempts, "3 attempts")
	})
	t.Run("install", func(t *testing.T) {
		srv := sandboxtest.NewServer(t)
		srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{Stderr: "npm ERR! network\n", ExitCode: 1})
		var out bytes.Buffer
		err := run(context.Background(), config{Client: srv.Client(), Mode: Vercel, Message: "hi", Out: &out})
		assert.ErrorIs(t, err, workload.ErrSetupFailed)
		assert.Contains(t, out.String(), "setup npm install ms: SANDBOX_SETUP_FAILED")
		assert.Contains(t, out.String(), "stopped: true")
		assert.Zero(t, countCalls(srv, "node"), "the agent did not run")
	})
	t.Run("bad agent output", func(t *testing.T) {
		srv := sandboxtest.NewServer(t)
		srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{})
		srv.Script().Handle(sandboxtest.MatchName("node"), sandboxtest.Reply{Stdout: "Traceback: oops\n"})
		var out bytes.Buffer
		err := run(context.Background(), config{Client: srv.Client(), Mode: Vercel, Message: "hi", Out: &out})
		assert.ErrorIs(t, err, workload.ErrExecutionFailed)
		var we *workload.Error
		require.ErrorAs(t, err, &we)
		assert.Equal(t, "The agent returned an answer that could not be read.", we.UserMessage())
	})
	t.Run("agent fails", func(t *testing.T) {
		srv := sandboxtest.NewServer(t)
		srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{})
		srv.Script().Handle(sandboxtest.MatchName("node"), sandboxtest.Reply{Stderr: "TypeError: x\n", ExitCode: 1})
		var out bytes.Buffer
		err := run(context.Background(), config{Client: srv.Client(), Mode: Vercel, Message: "hi", Out: &out})
		assert.ErrorIs(t, err, workload.ErrExecutionFailed)
		assert.Contains(t, err.Error(), "TypeError: x")
		assert.Contains(t, out.String(), "execute agent: AGENT_EXECUTION_FAILED")
	})
	t.Run("empty message", func(t *testing.T) {
		err := run(context.Background(), config{Message: "  "})
		assert.ErrorIs(t, err, workload.ErrInvalidInput)
	})
}

func countCalls(srv *sandboxtest.Server, name string) int {
	n := 0
	for _, c := range srv.Script().Calls() {
		if c.Name == name {
			n++
		}
	}
	return n
}
