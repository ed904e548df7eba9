package guard_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command/guard"
)

// The rules of a secret (token shapes, writes cut anywhere, what is held
// back) are tested where they live, in internal/redact. These tests check
// what guard adds: its names and the wrapper's contract.

func TestRedactorRedacts(t *testing.T) {
	t.Parallel()
	// A token shape, built at run time so that no scanner mistakes this
	// file for one holding a real credential.
	ghToken := "ghp" + "_" + strings.Repeat("A1b2C3d4", 5)
	r := guard.NewRedactor("hunter2-secret", "")
	assert.Equal(t, "password is "+guard.Redacted+"!", r.Redact("password is hunter2-secret!"))
	assert.Equal(t, "token "+guard.Redacted+" end", r.Redact("token "+ghToken+" end"))
	assert.Equal(t, "the bearer of news", r.Redact("the bearer of news"))
}

func TestRedactorWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := guard.NewRedactor("hunter2-secret").Writer(&out)
	for _, part := range []string{"before hun", "ter2-sec", "ret after\n"} {
		n, err := w.Write([]byte(part))
		require.NoError(t, err)
		assert.Equal(t, len(part), n)
	}
	_, err := w.Write([]byte("tail hunter"))
	require.NoError(t, err)
	assert.Positive(t, w.Held(), "a possible start of the secret is held back")
	require.NoError(t, w.Close())
	assert.Equal(t, "before [REDACTED] after\ntail hunter", out.String())
	assert.Zero(t, w.Held())
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, assert.AnError }

func TestRedactorWriterErrors(t *testing.T) {
	t.Parallel()
	w := guard.NewRedactor().Writer(failWriter{})
	_, err := w.Write([]byte("hello world\n"))
	assert.ErrorIs(t, err, assert.AnError)
	assert.ErrorIs(t, w.Close(), assert.AnError)
}
