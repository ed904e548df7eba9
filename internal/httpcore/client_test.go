package httpcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Spec auth.md test 28, wire-protocol.md §1.2–1.4.
func TestRequestHeadersAndQuery(t *testing.T) {
	t.Parallel()
	uaRE := regexp.MustCompile(`^vercel-sandbox-go/` + regexp.QuoteMeta(Version) +
		` \(Go/[^;()]+; ` + runtime.GOOS + `/` + runtime.GOARCH + `\)( my-app/1\.0)?$`)

	tests := []struct {
		name       string
		call       Call
		teamCfg    string
		suffix     string
		wantTeam   string
		wantCT     string
		wantBody   string
		wantQuery  map[string][]string
		wantHeader map[string]string
	}{
		{
			name:     "GET uses the provider's team",
			call:     Call{Method: "GET", Path: "/v2/sandboxes/x"},
			wantTeam: "team_prov", wantCT: "application/json",
		},
		{
			name:      "DELETE with team override and query",
			call:      Call{Method: "DELETE", Path: "/v2/sandboxes/x", Query: map[string][]string{"projectId": {"prj"}}},
			teamCfg:   "team_cfg",
			wantTeam:  "team_cfg",
			wantCT:    "application/json",
			wantQuery: map[string][]string{"projectId": {"prj"}},
		},
		{
			name: "caller's teamId is replaced, never duplicated",
			call: Call{Method: "GET", Path: "/v2/sandboxes", Query: map[string][]string{
				"teamId": {"team_other", "team_third"}, "tags": {"a:1", "b:2"}, "project": {"p"}}},
			wantTeam:  "team_prov",
			wantCT:    "application/json",
			wantQuery: map[string][]string{"tags": {"a:1", "b:2"}, "project": {"p"}},
		},
		{
			name:     "POST JSON with a user agent suffix",
			call:     Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", JSON: map[string]string{"command": "ls"}, Safety: Unsafe},
			suffix:   "  my-app/1.0 ",
			wantTeam: "team_prov", wantCT: "application/json", wantBody: `{"command":"ls"}`,
		},
		{
			name: "content type and headers of the call",
			call: Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/fs/write", ContentType: "application/gzip",
				Header: http.Header{"X-Cwd": {"/"}, "Authorization": {"Bearer spoofed"}, "User-Agent": {"spoofed"}},
				Body:   func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("gz")), nil }},
			wantTeam: "team_prov", wantCT: "application/gzip", wantBody: "gz",
			wantHeader: map[string]string{"X-Cwd": "/"},
		},
		{
			name:     "body-less POST",
			call:     Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/stop"},
			wantTeam: "team_prov", wantCT: "application/json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				got  *http.Request
				body []byte
			)
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				got = r.Clone(context.Background())
				body, _ = io.ReadAll(r.Body)
			})
			c := newClient(t, srv.URL+"/api/", func(c *Config) { c.TeamID = tt.teamCfg; c.UserAgent = tt.suffix })
			call := tt.call
			require.NoError(t, c.JSON(t.Context(), &call, nil))
			require.EqualValues(t, 1, hits.Load())

			assert.Equal(t, tt.call.Method, got.Method)
			assert.Equal(t, "/api"+tt.call.Path, got.URL.Path)
			assert.Equal(t, []string{"Bearer " + canary}, got.Header.Values("Authorization"))
			assert.Equal(t, tt.wantCT, got.Header.Get("Content-Type"))
			assert.Equal(t, tt.wantBody, string(body))
			ua := got.Header.Get("User-Agent")
			assert.Regexp(t, uaRE, ua)
			assert.Equal(t, strings.TrimSpace(tt.suffix) != "", strings.HasSuffix(ua, ") my-app/1.0"), ua)
			q := got.URL.Query()
			assert.Equal(t, []string{tt.wantTeam}, q["teamId"], "exactly one teamId")
			assert.True(t, strings.HasPrefix(got.URL.RawQuery, "teamId="+tt.wantTeam+"&") || got.URL.RawQuery == "teamId="+tt.wantTeam,
				"teamId comes first: %s", got.URL.RawQuery)
			for k, v := range tt.wantQuery {
				assert.Equal(t, v, q[k], k)
			}
			assert.Len(t, q, 1+len(tt.wantQuery))
			for k, v := range tt.wantHeader {
				assert.Equal(t, v, got.Header.Get(k), k)
			}
		})
	}
}

func TestEmptyTokenAndTeam(t *testing.T) {
	t.Parallel()
	var got *http.Request
	srv, _ := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ int32) { got = r.Clone(context.Background()) })
	c := newClient(t, srv.URL, withProvider(staticProvider("", "", "")))
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x", Query: map[string][]string{"a": {"1"}}}, nil))
	assert.Equal(t, "a=1", got.URL.RawQuery)
	assert.Empty(t, got.Header.Values("Authorization"), "no Authorization header for an empty token")
}

func TestTokenAskedOnEveryAttempt(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	p := auth.ProviderFunc(func(context.Context) (auth.Credentials, error) {
		n := calls.Add(1)
		return auth.Credentials{Token: fmt.Sprintf("%s-%d", canary, n), TeamID: fmt.Sprintf("team_%d", n)}, nil
	})
	var mu sync.Mutex
	var seen []string
	srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.URL.RawQuery)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	c := newClient(t, srv.URL, withProvider(p))
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil))
	assert.EqualValues(t, 2, hits.Load())
	assert.Equal(t, []string{"Bearer " + canary + "-1 teamId=team_1", "Bearer " + canary + "-2 teamId=team_2"}, seen)
}

func TestScope(t *testing.T) {
	t.Parallel()
	c := newClient(t, "https://api.example.com")
	team, project, err := c.Scope(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "team_prov", team)
	assert.Equal(t, "prj_prov", project)

	c = newClient(t, "https://api.example.com", func(c *Config) { c.TeamID, c.ProjectID = "t2", "p2" })
	team, project, err = c.Scope(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "t2", team)
	assert.Equal(t, "p2", project)
}

func TestMiddlewareWrapsEveryAttempt(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
		assert.Equal(t, "outer,inner", r.Header.Get("X-Order"))
		assert.Equal(t, fmt.Sprint(n), r.Header.Get("X-Attempt"))
		if n == 1 {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	var attempts atomic.Int32
	mw := func(name string) Middleware {
		return func(req *http.Request, next RoundTripFunc) (*http.Response, error) {
			assert.Equal(t, "Bearer "+canary, req.Header.Get("Authorization"), "middleware runs after auth")
			if name == "outer" {
				req.Header.Set("X-Attempt", fmt.Sprint(attempts.Add(1)))
				req.Header.Set("X-Order", name)
			} else {
				req.Header.Set("X-Order", req.Header.Get("X-Order")+","+name)
			}
			return next(req)
		}
	}
	c := newClient(t, srv.URL, func(c *Config) { c.Middleware = []Middleware{mw("outer"), mw("inner")} })
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil))
	assert.EqualValues(t, 2, hits.Load())
	assert.EqualValues(t, 2, attempts.Load())
}

func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	})
	c := newClient(t, srv.URL)
	err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusFound, ae.StatusCode)
	assert.EqualValues(t, 1, hits.Load())
	assert.Zero(t, elsewhere.Load())
	// The raw client does not follow redirects either.
	resp, err := c.httpClient(nil).Get(srv.URL + "/v2/x")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.Zero(t, elsewhere.Load())
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	p := staticProvider(canary, "t", "p")
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"https", Config{BaseURL: "https://vercel.com/api", Provider: p}, ""},
		{"trailing slash", Config{BaseURL: "https://api.vercel.com/", Provider: p}, ""},
		{"http loopback IPv4", Config{BaseURL: "http://127.0.0.1:8080", Provider: p}, ""},
		{"http loopback IPv6", Config{BaseURL: "http://[::1]:8080", Provider: p}, ""},
		{"http localhost", Config{BaseURL: "http://localhost:3000/api", Provider: p}, ""},
		{"http to a remote host", Config{BaseURL: "http://api.vercel.com", Provider: p}, "BaseURL"},
		{"http to a private address", Config{BaseURL: "http://10.0.0.1", Provider: p}, "BaseURL"},
		{"http to a look-alike", Config{BaseURL: "http://localhost.evil.com", Provider: p}, "BaseURL"},
		{"http to a .localhost name", Config{BaseURL: "http://api.localhost:3000", Provider: p}, "BaseURL"},
		{"http localhost through an opaque transport", Config{BaseURL: "http://localhost:3000", Provider: p,
			Transport: RoundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })}, "BaseURL"},
		{"negative answer limit", Config{BaseURL: "https://vercel.com", Provider: p, MaxResponseSize: -1}, "MaxResponseSize"},
		{"empty", Config{Provider: p}, "BaseURL"},
		{"relative", Config{BaseURL: "/api", Provider: p}, "BaseURL"},
		{"other scheme", Config{BaseURL: "ftp://vercel.com", Provider: p}, "BaseURL"},
		{"user info", Config{BaseURL: "https://user:" + canary + "@vercel.com", Provider: p}, "BaseURL"},
		{"query", Config{BaseURL: "https://vercel.com?teamId=x", Provider: p}, "BaseURL"},
		{"no provider", Config{BaseURL: "https://vercel.com"}, "Credentials"},
		{"negative timeout", Config{BaseURL: "https://vercel.com", Provider: p, RequestTimeout: -1}, "RequestTimeout"},
		{"base above max delay", Config{BaseURL: "https://vercel.com", Provider: p,
			Retry: RetryPolicy{BaseDelay: time.Second, MaxDelay: time.Millisecond}}, "RetryPolicy.BaseDelay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tt.cfg)
			if tt.field == "" {
				require.NoError(t, err)
				assert.Equal(t, strings.TrimRight(tt.cfg.BaseURL, "/"), c.base.String())
				assert.NotNil(t, c.Logger())
				return
			}
			assert.Nil(t, c)
			var ie *apierr.InputError
			var ue *apierr.InsecureURLError
			switch {
			case errors.As(err, &ie):
				assert.Equal(t, tt.field, ie.Field)
			case errors.As(err, &ue):
				assert.Equal(t, tt.field, ue.Field)
			default:
				t.Fatalf("want an *InputError or *InsecureURLError, got %T: %v", err, err)
			}
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)
			noSecret(t, err)
		})
	}
}

// TestLocalhostIsDialledWithoutDNS calls a base URL named localhost
// through a transport of the test's own: the request arrives, and its
// dialer is only ever given literal addresses, so nothing looked the name
// up (whoever answered could have received the token).
func TestLocalhostIsDialledWithoutDNS(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) { _, _ = w.Write([]byte(`{}`)) })
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var mu sync.Mutex
	var dialled []string
	d := &net.Dialer{}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return d.DialContext(ctx, network, addr)
	}}
	c := newClient(t, "http://localhost:"+port, func(c *Config) { c.Transport = tr })
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/x"}, nil))
	assert.EqualValues(t, 1, hits.Load())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, dialled)
	for _, a := range dialled {
		h, _, _ := net.SplitHostPort(a)
		assert.NotNil(t, net.ParseIP(h), "the dialer was given a name to look up: %s", a)
	}
}
