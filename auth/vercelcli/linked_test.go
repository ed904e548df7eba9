package vercelcli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

// Test 17.
func TestOIDC_ExpiredRefreshWritesCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.env.Set(auth.EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
	fresh := tok("team", "prj", t0.Add(12*time.Hour))
	f.writeCLIAuth(`{"token":"cli_token"}`)
	f.srv.Respond(tokenResponse(fresh))

	c, err := f.oidc().Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, fresh, c.Token)

	cache := filepath.Join(f.data, "com.vercel.token", "prj.json")
	fi, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(cache)
	require.NoError(t, err)
	assert.JSONEq(t, `{"token":"`+fresh+`"}`, string(data))
	entries, err := os.ReadDir(filepath.Dir(cache))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary files are left behind")
}

// Test 18.
func TestOIDC_TokenCache(t *testing.T) {
	t.Parallel()
	cacheFile := func(f *fixture) string { return filepath.Join(f.data, "com.vercel.token", "prj.json") }
	t.Run("valid cache is used", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cached := tok("team", "prj", t0.Add(time.Hour))
		f.write(cacheFile(f), `{"token":"`+cached+`"}`)
		f.env.Set(auth.EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
		f.writeCLIAuth(`{"token":"cli_token"}`)
		c, err := f.oidc().Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, cached, c.Token)
		assert.Zero(t, f.srv.Hits())
	})
	t.Run("expired cache is not", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.write(cacheFile(f), `{"token":"`+tok("team", "prj", t0.Add(time.Minute))+`"}`)
		f.env.Set(auth.EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
		f.writeCLIAuth(`{"token":"cli_token"}`)
		fresh := tok("team", "prj", t0.Add(12*time.Hour))
		f.srv.Respond(tokenResponse(fresh))
		c, err := f.oidc().Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, fresh, c.Token)
		assert.EqualValues(t, 1, f.srv.Hits())
	})
	t.Run("rejected cached token is skipped", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		cached := tok("team", "prj", t0.Add(time.Hour))
		f.write(cacheFile(f), `{"token":"`+cached+`"}`)
		f.env.Set(auth.EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
		f.writeCLIAuth(`{"token":"cli_token"}`)
		fresh := tok("team", "prj", t0.Add(12*time.Hour))
		f.srv.Respond(tokenResponse(fresh))
		p := f.oidc()
		c, err := p.Credentials(context.Background())
		require.NoError(t, err)
		require.Equal(t, cached, c.Token)
		p.Invalidate(cached) // the API answered 401
		c, err = p.Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, fresh, c.Token)
		assert.EqualValues(t, 1, f.srv.Hits())
	})
}

// Test 21.
func TestLinkedProjectRefresher_MintErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		respond http.HandlerFunc
		want    string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, "Failed to refresh OIDC token: 500 Internal Server Error"},
		{"403 with message", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(403)
			_, _ = w.Write([]byte(`{"error":{"code":"forbidden","message":"Not allowed"}}`))
		}, "Failed to refresh OIDC token: 403 Forbidden: Not allowed"},
		{"empty object", writeBody(`{}`), "malformed"},
		{"non-string token", writeBody(`{"token":5}`), "malformed"},
		{"array", writeBody(`[]`), "expected an object"},
		{"not json", writeBody(`<html>`), "not JSON"},
		{"token not a JWT", writeBody(`{"token":"abc"}`), "Invalid Vercel OIDC token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.writeCLIAuth(`{"token":"cli_token"}`)
			f.srv.Respond(tt.respond)
			r := f.refresher()
			_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "cli_token")
			assert.NoFileExists(t, filepath.Join(f.data, "com.vercel.token", "prj.json"))
		})
	}
}

func writeBody(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(body)) }
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "x.json")
	require.NoError(t, writeFileAtomic(host.OSFS{}, p, []byte(`{"a":1}`)))
	require.NoError(t, writeFileAtomic(host.OSFS{}, p, []byte(`{"a":2}`)))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var v map[string]int
	require.NoError(t, json.Unmarshal(data, &v))
	assert.Equal(t, 2, v["a"])
	entries, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

// Test 11: the tier of auth.Default that mints for the linked project.
func TestLinkedProjectMint(t *testing.T) {
	t.Parallel()
	minted := tok("team", "prj", t0.Add(12*time.Hour))
	t.Run("link in a parent directory", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link(f.cwd, `{"projectId":"prj","orgId":"team"}`)
		f.cwd = filepath.Join(f.cwd, "a", "b")
		require.NoError(t, os.MkdirAll(f.cwd, 0o755))
		f.writeCLIAuth(`{"token":"cli_token"}`)
		f.srv.Respond(tokenResponse(minted))

		c, err := f.linkedTier().Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, auth.Credentials{Token: minted, TeamID: "team", ProjectID: "prj", Expiry: t0.Add(12 * time.Hour), Source: auth.SourceLinkedProject}, c)
		assert.Equal(t, mintRequest{Method: "POST", Path: "/v1/projects/prj/token", RawQuery: "source=vercel-oidc-refresh&teamId=team", Authorization: "Bearer cli_token"}, f.lastRequest())
		assert.EqualValues(t, 1, f.srv.Hits())
	})
	t.Run("nearest .vercel has no project.json", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link(f.cwd, `{"projectId":"prj","orgId":"team"}`)
		f.cwd = filepath.Join(f.cwd, "a")
		f.link(f.cwd, "")
		f.writeCLIAuth(`{"token":"cli_token"}`)
		_, err := f.linkedTier().Credentials(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "project.json not found")
		assert.ErrorIs(t, err, ErrProjectNotLinked)
		var guidance *auth.OIDCContextError
		assert.ErrorAs(t, err, &guidance)
		assert.Zero(t, f.srv.Hits())
	})
	t.Run("no orgId", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link(f.cwd, `{"projectId":"prj"}`)
		f.writeCLIAuth(`{"token":"cli_token"}`)
		f.srv.Respond(tokenResponse(minted))
		_, err := f.linkedTier().Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, "source=vercel-oidc-refresh", f.lastRequest().RawQuery)
	})
	t.Run("hostile ids are refused before any request", func(t *testing.T) {
		t.Parallel()
		for _, link := range []string{
			`{"projectId":"my project/x","orgId":"team"}`,
			`{"projectId":"../p","orgId":"team"}`,
			`{"projectId":"prj","orgId":"team&x=1"}`,
		} {
			f := newFixture(t)
			f.link(f.cwd, link)
			f.writeCLIAuth(`{"token":"cli_token"}`)
			f.srv.Respond(tokenResponse(minted))
			_, err := f.linkedTier().Credentials(context.Background())
			require.ErrorIs(t, err, ErrInvalidID, link)
			assert.Zero(t, f.srv.Hits(), "a path or query could be rewritten: %s", link)
		}
	})
}

func TestLinkedProjectRefreshRefusesHostileIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.writeCLIAuth(`{"token":"cli_token"}`)
	f.srv.Respond(tokenResponse(tok("team", "prj", t0.Add(12*time.Hour))))
	r := f.refresher()
	for _, ids := range [][2]string{{"../p", "team"}, {"p", "../t"}, {"-p", ""}, {"p/../../q", ""}} {
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: ids[0], TeamID: ids[1]})
		require.ErrorIs(t, err, ErrInvalidID, "%q", ids)
	}
	assert.Zero(t, f.srv.Hits())
}

func TestLinked(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.refresher()
	err := r.Linked()
	assert.ErrorIs(t, err, ErrProjectNotLinked)
	assert.Contains(t, err.Error(), "Unable to find project root directory")

	f.link(f.root, "")
	assert.NoError(t, r.Linked(), "a .vercel entry above the working directory is a link")

	explicit := newFixture(t).refresher()
	explicit.ProjectID = "prj"
	assert.NoError(t, explicit.Linked())

	var _ auth.LinkedRefresher = r
}

// Default is auth.Default with a refresher: the chain's order holds.
func TestDefault(t *testing.T) {
	t.Parallel()
	called := false
	ref := auth.RefresherFunc(func(context.Context, auth.Target) (string, error) {
		called = true
		return tok("team", "prj", time.Time{}), nil
	})
	c, err := Default(auth.DefaultOptions{Refresher: ref}).Credentials(auth.WithOIDCToken(context.Background(), tok("t", "p", time.Time{})))
	require.NoError(t, err)
	assert.Equal(t, auth.SourceOIDCContext, c.Source)
	assert.False(t, called, "a context token needs no refresh")
}
