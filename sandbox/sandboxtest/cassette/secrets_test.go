package cassette_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// recordOne records fn against a fresh fake whose command "split" plays
// steps, with the canary token and opts, and returns the cassette's text.
func recordOne(t *testing.T, steps sandboxtest.Steps, fn func(context.Context, *sandbox.Sandbox), opts ...cassette.Option) string {
	t.Helper()
	srv := newFake(t)
	srv.Script().Override(sandboxtest.MatchName("split"), steps)
	path := filepath.Join(t.TempDir(), "one.cassette")
	c, err := cassette.Open(path, cassette.Record, opts...)
	require.NoError(t, err)
	client := srv.Client(sandbox.WithToken(canaryToken, canaryTeam, canaryProject), sandbox.WithTransport(c.Transport(nil)))
	ctx := t.Context()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "secrets"})
	require.NoError(t, err)
	fn(ctx, sb)
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw)
}

// The values of variables whose names a person reads as secret are not
// written; the working directory and other plain values are.
func TestSecretNamedVariablesNeverWritten(t *testing.T) {
	env := map[string]string{
		"GH_PAT":               "gh-pat-value-1f2e3d",
		"DB_PASS":              "db-pass-value-4c5b6a",
		"MYSQL_PWD":            "mysql-pwd-value-7d8e9f",
		"SENTRY_DSN":           "https://abc123def@o1.ingest.example/42",
		"DB_CONNECTION_STRING": "Server=db;User=sa;Password=conn-str-pw-0a1b",
		"PWD":                  "/srv/visible-working-dir",
		"KEYBOARD":             "visible-keyboard-layout",
	}
	raw := recordOne(t, sandboxtest.Steps{}.Exit(0), func(ctx context.Context, sb *sandbox.Sandbox) {
		out, err := sb.Output(ctx, &command.Cmd{Name: "env", Env: env})
		require.NoError(t, err)
		require.Contains(t, string(out), "GH_PAT=gh-pat-value-1f2e3d", "the command saw its environment")
	})
	for _, name := range []string{"GH_PAT", "DB_PASS", "MYSQL_PWD", "SENTRY_DSN", "DB_CONNECTION_STRING"} {
		assert.False(t, strings.Contains(raw, env[name]), "the value of %s is written", name)
	}
	for _, name := range []string{"PWD", "KEYBOARD"} {
		assert.Contains(t, raw, env[name], "%s is not a secret", name)
	}
}
