package vercelcli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fake clock's start: a whole second, so JWT exp values (seconds)
// line up exactly with it.
var t0 = time.Unix(1_700_000_000, 0)

// testEnv is a fake environment.
type testEnv struct {
	mu   sync.Mutex
	vars map[string]string
}

func newTestEnv(kv ...string) *testEnv {
	e := &testEnv{vars: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		e.vars[kv[i]] = kv[i+1]
	}
	return e
}

func (e *testEnv) Lookup(k string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.vars[k]
	return v, ok
}

func (e *testEnv) Set(k, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vars[k] = v
}

type mintRequest = authtest.MintRequest

var tokenResponse = authtest.TokenResponse

// fixture is a sandboxed developer machine: a home, a data directory
// (XDG_DATA_HOME), a working directory, a fake env and clock, and a mint
// server.
type fixture struct {
	t     *testing.T
	root  string
	home  string
	data  string
	cwd   string
	env   *testEnv
	clock *authtest.Clock
	srv   *authtest.MintServer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{
		t:     t,
		root:  root,
		home:  filepath.Join(root, "home"),
		data:  filepath.Join(root, "data"),
		cwd:   filepath.Join(root, "work"),
		clock: authtest.NewClock(t0),
		srv:   authtest.NewMintServer(t),
	}
	for _, d := range []string{f.home, f.data, f.cwd} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	f.env = newTestEnv("XDG_DATA_HOME", f.data)
	return f
}

func (f *fixture) system() host.System {
	return host.System{
		LookupEnv:   f.env.Lookup,
		Getwd:       func() (string, error) { return f.cwd, nil },
		UserHomeDir: func() (string, error) { return f.home, nil },
		FS:          host.OSFS{},
		Clock:       f.clock,
	}
}

// link creates dir/.vercel and, unless projectJSON is empty, project.json.
func (f *fixture) link(dir, projectJSON string) {
	f.t.Helper()
	require.NoError(f.t, os.MkdirAll(filepath.Join(dir, ".vercel"), 0o755))
	if projectJSON != "" {
		f.write(filepath.Join(dir, ".vercel", "project.json"), projectJSON)
	}
}

func (f *fixture) cliDir() string { return filepath.Join(f.data, "com.vercel.cli") }

func (f *fixture) writeCLIAuth(content string) string {
	p := filepath.Join(f.cliDir(), "auth.json")
	f.write(p, content)
	return p
}

func (f *fixture) write(path, content string) {
	f.t.Helper()
	require.NoError(f.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(f.t, os.WriteFile(path, []byte(content), 0o600))
}

func (f *fixture) lastRequest() mintRequest {
	f.t.Helper()
	r, ok := f.srv.LastRequest()
	require.True(f.t, ok, "no mint request")
	return r
}

func (f *fixture) refresher() *LinkedProjectRefresher {
	return &LinkedProjectRefresher{APIBaseURL: f.srv.URL, HTTPClient: f.srv.Client(), sys: f.system()}
}

// oidc builds an OIDCProvider reading VERCEL_OIDC_TOKEN from the fixture's
// env and refreshing through the fixture's refresher.
func (f *fixture) oidc() *auth.OIDCProvider {
	return auth.NewOIDCProvider(auth.OIDCOptions{
		Source: func(context.Context) (string, bool, error) {
			v, _ := f.env.Lookup(auth.EnvOIDCToken)
			v = strings.TrimSpace(v)
			return v, v != "", nil
		},
		Refresher: f.refresher(),
		Clock:     f.clock,
	})
}

// linkedTier builds what auth.Default asks last: an OIDCProvider with no
// token source, whose every token comes from the fixture's refresher.
func (f *fixture) linkedTier() *auth.OIDCProvider {
	return auth.NewOIDCProvider(auth.OIDCOptions{Refresher: f.refresher(), Label: auth.SourceLinkedProject, Clock: f.clock})
}

func tok(team, project string, exp time.Time) string { return authtest.Token(team, project, exp) }
