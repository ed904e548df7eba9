package backend

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// noCredentials is a provider that finds nothing, counting its calls.
type noCredentials struct{ calls int }

func (p *noCredentials) Credentials(context.Context) (auth.Credentials, error) {
	p.calls++
	return auth.Credentials{}, errors.New("no credentials")
}

func TestOpenLocal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var log bytes.Buffer
	b, err := open(ctx, &log, false, &noCredentials{})
	require.NoError(t, err)
	defer b.Close()
	assert.True(t, b.Local())
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, b.URL())
	assert.Equal(t, "no Vercel credentials in use: using the embedded local server at "+b.URL()+"\n"+
		"(it runs commands as local processes on this machine, without isolation)\n", log.String())

	// Two independent clients see the same server; commands are local
	// processes.
	c1, err := b.NewClient()
	require.NoError(t, err)
	sb, err := c1.Create(ctx, sandbox.CreateParams{Timeout: time.Minute})
	require.NoError(t, err)
	c2, err := b.NewClient()
	require.NoError(t, err)
	sb2, err := c2.Get(ctx, sb.Name())
	require.NoError(t, err)
	res, err := sb2.Command("sh", "-c", "echo hello from $(uname -s)").Output(ctx)
	require.NoError(t, err)
	assert.Contains(t, string(res), "hello from ")

	// The clients carry the server's own random token, which no other
	// client knows; options given to NewClient apply after the backend's
	// own.
	auth1, team1 := lastAuth(ctx, t, b)
	assert.Equal(t, "Bearer "+b.srv.Token(), auth1)
	assert.NotEqual(t, "Bearer "+local.DefaultToken, auth1)
	assert.Equal(t, local.TeamID, team1)
	_, team2 := lastAuth(ctx, t, b, sandbox.WithTeam("team_other"), sandbox.WithProject("prj_other"))
	assert.Equal(t, "team_other", team2)
	other, err := b.NewClient(sandbox.WithToken("other-token"))
	require.NoError(t, err)
	_, err = other.Get(ctx, sb.Name())
	assert.ErrorIs(t, err, sandbox.ErrForbidden, "another token is refused")

	// Close stops the sandboxes and the server; it can be called again.
	b.Close()
	b.Close()
	_, err = http.Get(b.URL() + "/v2/sandboxes")
	assert.Error(t, err, "the server no longer listens")
}

// countingStatic counts the lookups of a provider that finds credentials.
type countingStatic struct {
	auth.Provider
	calls int
}

func (p *countingStatic) Credentials(ctx context.Context) (auth.Credentials, error) {
	p.calls++
	return p.Provider.Credentials(ctx)
}

func TestOpenWithCredentials(t *testing.T) {
	openStatic := func(t *testing.T, forceLocal bool) (*Backend, *countingStatic, string) {
		p := &countingStatic{Provider: auth.Static(auth.Credentials{Token: "vercel-token", TeamID: "team_vercel", ProjectID: "prj_vercel"})}
		var log bytes.Buffer
		b, err := open(context.Background(), &log, forceLocal, p)
		require.NoError(t, err)
		t.Cleanup(b.Close)
		return b, p, log.String()
	}
	t.Run("vercel", func(t *testing.T) {
		b, p, log := openStatic(t, false)
		assert.False(t, b.Local())
		assert.Equal(t, sandbox.DefaultBaseURL, b.URL())
		assert.Equal(t, "using Vercel (credentials found in the environment)\n", log)
		assert.Equal(t, 1, p.calls)

		// A fake stands in for Vercel: the backend's clients use the
		// credentials it found.
		srv := sandboxtest.NewServer(t)
		authz, team := lastAuth(context.Background(), t, b, sandbox.WithBaseURL(srv.URL()))
		assert.Equal(t, "Bearer vercel-token", authz)
		assert.Equal(t, "team_vercel", team)
		assert.Len(t, srv.Sessions(), 1)
		b.Close() // nothing to close
	})
	t.Run("forced local", func(t *testing.T) {
		b, p, log := openStatic(t, true)
		assert.True(t, b.Local())
		assert.Zero(t, p.calls, "credentials are not looked up when the local server is forced")
		assert.Contains(t, log, "without isolation")
	})
}

// lastAuth creates and stops a sandbox with a client of b made with opts,
// and returns the Authorization header and teamId of its last request.
func lastAuth(ctx context.Context, t *testing.T, b *Backend, opts ...sandbox.Option) (authorization, team string) {
	t.Helper()
	record := func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		authorization, team = req.Header.Get("Authorization"), req.URL.Query().Get("teamId")
		return next(req)
	}
	c, err := b.NewClient(append(opts, sandbox.WithMiddleware(record))...)
	require.NoError(t, err)
	sb, err := c.Create(ctx, sandbox.CreateParams{Timeout: time.Minute})
	require.NoError(t, err)
	_, err = sb.Stop(ctx)
	require.NoError(t, err)
	return authorization, team
}

func TestOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log bytes.Buffer
	b, err := open(ctx, &log, false, &noCredentials{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, b)
	assert.Empty(t, log.String())
}

func TestOpenFromEnvironment(t *testing.T) {
	for _, k := range []string{"VERCEL_OIDC_TOKEN", "VERCEL_OIDC_TOKEN_FILE", "VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_ORG_ID", "VERCEL_PROJECT_ID", "XDG_DATA_DIRS"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Chdir(t.TempDir())
	var log bytes.Buffer
	b, err := Open(context.Background(), &log, false)
	require.NoError(t, err)
	defer b.Close()
	assert.True(t, b.Local(), log.String())
	assert.Contains(t, log.String(), "embedded local server")
}
