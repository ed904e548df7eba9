package cassette_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/cassette"
)

// recordOne records fn against a fresh fake whose command "split" plays
// steps, with the canary token and opts, and returns the cassette's text
// and path.
func recordOne(t *testing.T, steps sandboxtest.Steps, fn func(context.Context, *sandbox.Sandbox), opts ...cassette.Option) (string, string) {
	t.Helper()
	srv := newFake(t)
	srv.Script().Override(sandboxtest.MatchName("split"), steps)
	path := filepath.Join(t.TempDir(), "one.cassette")
	c, err := cassette.Open(path, cassette.Record, opts...)
	require.NoError(t, err)
	client := srv.Client(sandbox.WithToken(canaryToken), sandbox.WithTeam(canaryTeam), sandbox.WithProject(canaryProject), sandbox.WithTransport(c.Transport(nil)))
	ctx := t.Context()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "secrets"})
	require.NoError(t, err)
	fn(ctx, sb)
	require.NoError(t, c.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(raw), path
}

// A secret that a command prints in two writes reaches the recording as
// two frames, half in each: neither half may be written, whether the
// secret is the bearer token, a value given to WithRedact, the value of
// a secret-named variable or only has the shape of a token.
func TestSecretSplitAcrossFramesNeverWritten(t *testing.T) {
	const (
		explicit = "explicit-secret-value-5c1e"
		pat      = "pat-value-0a9b8c7d6e5f"
	)
	ghToken := "ghp" + "_" + strings.Repeat("Zx8Yw7Vu6T", 4)
	secrets := []string{canaryToken, explicit, pat, ghToken}
	steps := sandboxtest.Steps{}
	for _, s := range secrets {
		steps = steps.Stdout("value=" + s[:len(s)/2]).Stdout(s[len(s)/2:] + "\n")
	}
	steps = steps.Stdout("end\n").Exit(0)
	var printed string
	raw, path := recordOne(t, steps, func(ctx context.Context, sb *sandbox.Sandbox) {
		split := sb.Command("split")
		split.Env = map[string]string{"GH_PAT": pat}
		out, err := split.Output(ctx)
		require.NoError(t, err)
		printed = string(out)
	}, cassette.WithRedact(explicit))

	for _, s := range secrets {
		require.Contains(t, printed, s, "the caller reads the output as it was")
		assert.False(t, strings.Contains(raw, s[:len(s)/2]), "the first half of %s… is written", s[:4])
		assert.False(t, strings.Contains(raw, s[len(s)/2:]), "the second half of %s… is written", s[:4])
	}
	// What may begin a secret is recorded with the next frame.
	assert.Equal(t, len(secrets), strings.Count(raw, `"data":"value={{secret}}\n"`), "the output around a secret is kept")
	assert.Contains(t, raw, `"data":"end\n"`, "a frame that cannot begin a secret is kept as it came")

	c, err := cassette.Open(path, cassette.Replay)
	require.NoError(t, err)
	defer c.Close()
	sb, err := replayClient(t, c).Create(t.Context(), sandbox.CreateParams{Name: "secrets"})
	require.NoError(t, err)
	split := sb.Command("split")
	split.Env = map[string]string{"GH_PAT": pat}
	out, err := split.Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("value=REDACTED\n", len(secrets))+"end\n", string(out), "the replay reads the output with the secrets hidden")
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
	raw, _ := recordOne(t, sandboxtest.Steps{}.Exit(0), func(ctx context.Context, sb *sandbox.Sandbox) {
		cmd := sb.Command("env")
		cmd.Env = env
		out, err := cmd.Output(ctx)
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
