package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestVerifyRunnerLocal(t *testing.T) {
	testVerifyRunner(t, options{local: true})
}

func TestVerifyRunnerShellProject(t *testing.T) {
	s := testVerifyRunner(t, options{local: true, shell: true})
	assert.Contains(t, s, "using the shell-based project")
}

func testVerifyRunner(t *testing.T, o options) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	require.NoError(t, run(ctx, &out, &errOut, o), out.String())
	s := out.String()
	assert.Contains(t, errOut.String(), "verify-runner: no Vercel credentials in use: using the embedded local server at http://127.0.0.1:")
	assert.Contains(t, errOut.String(), "verify-runner: (it runs commands as local processes on this machine, without isolation)")
	assert.Contains(t, s, "==> using the embedded local server (local processes, not isolated)")

	// The secret the project prints is redacted everywhere.
	assert.NotRegexp(t, regexp.MustCompile(`demo-token-[0-9a-f]{24}`), s+errOut.String())
	assert.Contains(t, s, "calling the API with token [REDACTED]")
	assert.Contains(t, s, `curl -H "Authorization: Bearer [REDACTED]" https://example.com/upload`)

	// The allowed checks ran and passed: Go's or the shell project's.
	if strings.Contains(s, "writing a Go module") {
		assert.Contains(t, s, "$ go vet ./...\n    exit 0")
		assert.Contains(t, s, "--- PASS: TestAdd")
	} else {
		assert.Contains(t, s, "PASS: add 2 3 = 5")
		assert.Contains(t, s, "lint ok: lib/calc.sh")
	}

	// Each refused command names its rule.
	for _, want := range []string{
		"denied by rule default-deny: no rule allows curl",
		"denied by rule shell:",
		"denied by rule packages:     npx: npm package evil-pkg is not in the allowed packages",
		"denied by rule workspace:",
		"denied by rule default-deny: no rule allows cat",
	} {
		assert.Contains(t, s, want)
	}
	assert.Contains(t, s, "8 commands recorded, 5 denied")
	assert.Contains(t, s, `"denied": true`)
	assert.Contains(t, s, `"rule": "default-deny"`)
	return s
}
