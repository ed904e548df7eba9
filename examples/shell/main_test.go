package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// stdin is a file holding text, as a shell's redirection gives it.
func stdin(t *testing.T, text string) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stdin")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestScriptFromStdin(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code, err := run(t.Context(), stdin(t, "test -t 0 && echo on a terminal\nexit 4\n"), &out, &errOut, true)
	require.NoError(t, err)
	assert.Equal(t, 4, code, "the script's exit code")
	assert.Contains(t, out.String(), "on a terminal\r\n")
	assert.Contains(t, errOut.String(), "embedded local server")
}

func TestNoTerminalNoScript(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code, err := run(t.Context(), stdin(t, ""), &out, &errOut, true)
	require.NoError(t, err)
	assert.Zero(t, code, "nothing to do is not a failure")
	assert.Contains(t, errOut.String(), "not a terminal")
	assert.Empty(t, out.String())
}
