package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// steps splits the demonstration's output into its numbered steps.
func steps(out string) []string {
	var s []string
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 2 && line[0] >= '1' && line[0] <= '9' && line[1] == '.' {
			s = append(s, "")
		}
		if len(s) > 0 {
			s[len(s)-1] += line + "\n"
		}
	}
	return s
}

func TestDemonstration(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	got := steps(out.String())
	require.Len(t, got, 4, out.String())

	assert.Contains(t, got[0], "token verified: team team_demo, project prj_demo, sandbox sbx_demo (agent), for https://api.example.com/v1/charges")
	assert.Contains(t, got[0], "upstream: POST /v1/charges with the API key: charged", "the key was added on the way")
	assert.Contains(t, got[0], `the sandbox gets 200 {"id":"ch_1","amount":100}`)

	assert.Contains(t, got[1], "refused: proxy: invalid token: the signature does not verify")
	assert.Contains(t, got[1], "the sandbox gets 403 Forbidden")
	assert.NotContains(t, got[1], "upstream:", "a forged token never reaches the API")

	assert.Contains(t, got[2], "not a sandbox of ours")
	assert.Contains(t, got[2], "the sandbox gets 403 Forbidden")
	assert.NotContains(t, got[2], "upstream:")

	assert.Contains(t, got[3], "refused: proxy: no vercel-sandbox-oidc-token header")
	assert.Contains(t, got[3], "the sandbox gets 403 Forbidden")

	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "http://") {
			assert.Contains(t, line, "http://127.0.0.1:", "every server listens on loopback")
		}
	}
	assert.NotContains(t, out.String(), apiKey, "the key is never printed")
	assert.NotContains(t, out.String(), "eyJ", "no token is printed")
}

func TestCancelledContextEndsTheDemonstration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	require.ErrorIs(t, run(ctx, &out), context.Canceled)
}
