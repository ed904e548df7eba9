package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

func TestMiddleware(t *testing.T) {
	t.Parallel()
	jwt := tok("team_req", "prj_req", t0.Add(time.Hour))
	p := Default(DefaultOptions{sys: host.System{LookupEnv: newTestEnv().Lookup, Clock: fixedClock(t0)}})
	var got Credentials
	var gotErr error
	h := Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, gotErr = p.Credentials(r.Context())
	}))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-Vercel-OIDC-Token", jwt)
	h.ServeHTTP(httptest.NewRecorder(), req)
	require.NoError(t, gotErr)
	assert.Equal(t, jwt, got.Token)
	assert.Equal(t, "team_req", got.TeamID)
	assert.Equal(t, SourceOIDCContext, got.Source)

	// Without the header the context carries nothing.
	var ok bool
	h = Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok = OIDCTokenFromContext(r.Context())
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	assert.False(t, ok)
}

func TestContextToken(t *testing.T) {
	t.Parallel()
	_, ok := OIDCTokenFromContext(context.Background())
	assert.False(t, ok)
	_, ok = OIDCTokenFromContext(WithOIDCToken(context.Background(), ""))
	assert.False(t, ok)
	got, ok := OIDCTokenFromContext(WithOIDCToken(context.Background(), "abc"))
	assert.True(t, ok)
	assert.Equal(t, "abc", got)

	src := FromContext()
	tok, ok, err := src(WithOIDCToken(context.Background(), "abc"))
	assert.Equal(t, "abc", tok)
	assert.True(t, ok)
	assert.NoError(t, err)
}

func TestContextTokenInvalid(t *testing.T) {
	t.Parallel()
	p := Default(DefaultOptions{sys: host.System{LookupEnv: newTestEnv().Lookup}})
	_, err := p.Credentials(WithOIDCToken(context.Background(), "not-a-jwt"))
	assert.ErrorIs(t, err, ErrInvalidOIDCToken)
	assert.ErrorIs(t, err, ErrLocalOIDCContext)
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := newTestEnv("A", " tok \n", "EMPTY", "")
	tok, ok, err := fromEnv("A", host.System{LookupEnv: env.Lookup})(context.Background())
	assert.Equal(t, "tok", tok)
	assert.True(t, ok)
	assert.NoError(t, err)
	_, ok, err = fromEnv("EMPTY", host.System{LookupEnv: env.Lookup})(context.Background())
	assert.False(t, ok)
	assert.NoError(t, err)
	_, ok, _ = fromEnv("UNSET", host.System{LookupEnv: env.Lookup})(context.Background())
	assert.False(t, ok)
}

func TestFromFile(t *testing.T) {
	t.Parallel()
	mapFS := fstest.MapFS{"tok": {Data: []byte("  jwt-value\n")}, "empty": {Data: []byte("\n")}}
	fsys := readOnlyFS{mapFS}
	tok, ok, err := fromFile("tok", fsys)(context.Background())
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "jwt-value", tok)
	_, _, err = fromFile("empty", fsys)(context.Background())
	assert.EqualError(t, err, "The Vercel OIDC token file is empty: empty")
	_, _, err = fromFile("missing", fsys)(context.Background())
	assert.Error(t, err)

	// The real file system by default, re-read on every call.
	p := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(p, []byte("one"), 0o600))
	src := FromFile(p)
	tok, _, _ = src(context.Background())
	assert.Equal(t, "one", tok)
	require.NoError(t, os.WriteFile(p, []byte("two"), 0o600))
	tok, _, _ = src(context.Background())
	assert.Equal(t, "two", tok)
}

// readOnlyFS adapts an fstest.MapFS to host.FS for reads.
type readOnlyFS struct{ fstest.MapFS }

func (f readOnlyFS) ReadFile(name string) ([]byte, error) { return f.MapFS.ReadFile(name) }
func (f readOnlyFS) WriteFile(string, []byte, os.FileMode) error {
	return os.ErrPermission
}
func (f readOnlyFS) Stat(name string) (os.FileInfo, error) { return f.MapFS.Stat(name) }
func (f readOnlyFS) MkdirAll(string, os.FileMode) error    { return os.ErrPermission }
func (f readOnlyFS) Rename(string, string) error           { return os.ErrPermission }
func (f readOnlyFS) Remove(string) error                   { return os.ErrPermission }
