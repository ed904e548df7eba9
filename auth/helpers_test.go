package auth

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the fake clock's start: a whole second, so JWT exp values (seconds)
// line up exactly with it.
var t0 = time.Unix(1_700_000_000, 0)

// testEnv is a fake environment that counts reads.
type testEnv struct {
	mu    sync.Mutex
	vars  map[string]string
	reads map[string]int
}

func newTestEnv(kv ...string) *testEnv {
	e := &testEnv{vars: map[string]string{}, reads: map[string]int{}}
	for i := 0; i+1 < len(kv); i += 2 {
		e.vars[kv[i]] = kv[i+1]
	}
	return e
}

func (e *testEnv) Lookup(k string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reads[k]++
	v, ok := e.vars[k]
	return v, ok
}

func (e *testEnv) Set(k, v string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.vars[k] = v
}

func (e *testEnv) Reads(k string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reads[k]
}

// mintRequest is what the fake mint endpoint saw.
type mintRequest struct {
	Method, Path, RawQuery, Authorization string
}

// mintServer fakes POST /v1/projects/{p}/token. It counts hits atomically
// and answers with a scripted handler.
type mintServer struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	reqs    []mintRequest
	respond http.HandlerFunc
}

func newMintServer(t *testing.T) *mintServer {
	s := &mintServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.reqs = append(s.reqs, mintRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization")})
		respond := s.respond
		s.mu.Unlock()
		if respond == nil {
			http.Error(w, `{"error":{"message":"no response scripted"}}`, http.StatusInternalServerError)
			return
		}
		respond(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *mintServer) setRespond(f http.HandlerFunc) {
	s.mu.Lock()
	s.respond = f
	s.mu.Unlock()
}

func (s *mintServer) lastRequest(t *testing.T) mintRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.reqs, "no mint request")
	return s.reqs[len(s.reqs)-1]
}

func tokenResponse(tok string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"token": tok})
	}
}

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
	srv   *mintServer
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
		srv:   newMintServer(t),
	}
	for _, d := range []string{f.home, f.data, f.cwd} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	f.env = newTestEnv("XDG_DATA_HOME", f.data)
	return f
}

func (f *fixture) system() System {
	return System{
		LookupEnv:   f.env.Lookup,
		Getwd:       func() (string, error) { return f.cwd, nil },
		UserHomeDir: func() (string, error) { return f.home, nil },
		FS:          OSFS{},
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

func (f *fixture) refresher() *LinkedProjectRefresher {
	return &LinkedProjectRefresher{APIBaseURL: f.srv.URL, HTTPClient: f.srv.Client(), System: f.system()}
}

// defaults builds a Default provider wired to the fixture.
func (f *fixture) defaults(opts DefaultOptions) Provider {
	opts.System = f.system()
	opts.APIBaseURL = f.srv.URL
	opts.HTTPClient = f.srv.Client()
	return Default(opts)
}

// oidc builds an OIDCProvider reading VERCEL_OIDC_TOKEN from the fixture's
// env and refreshing through the fixture's mint server.
func (f *fixture) oidc(opts OIDCOptions) *OIDCProvider {
	opts.Source = FromEnv(EnvOIDCToken, f.env.Lookup)
	if opts.Refresher == nil {
		opts.Refresher = f.refresher()
	}
	opts.Clock = f.clock
	opts.LookupEnv = f.env.Lookup
	return NewOIDCProvider(opts)
}

func tok(team, project string, exp time.Time) string { return authtest.Token(team, project, exp) }

func mkJWT(claims map[string]any) string { return authtest.MakeJWT(claims) }

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
