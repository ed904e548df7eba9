package httpcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

func TestMain(m *testing.M) {
	// Every test closes its server and the idle connections of its own
	// transport (see newServer, newClient), so no net/http goroutine needs
	// to be ignored.
	goleak.VerifyTestMain(m)
}

// canary is the token of every test client. It must never show up in an
// error string or a log record.
const canary = "canary-secret-123"

// fastRetry keeps backoffs tiny so that retry tests run in milliseconds.
var fastRetry = RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

func staticProvider(token, team, project string) auth.ProviderFunc {
	return func(context.Context) (auth.Credentials, error) {
		return auth.Credentials{Token: token, TeamID: team, ProjectID: project, Source: auth.SourceExplicit}, nil
	}
}

// refreshingProvider hands out canary-secret-123-<gen> and moves to the
// next generation when told that the current token was rejected.
type refreshingProvider struct {
	mu          sync.Mutex
	gen         int
	invalidated []string
}

func (p *refreshingProvider) Credentials(context.Context) (auth.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return auth.Credentials{Token: fmt.Sprintf("%s-%d", canary, p.gen), TeamID: "team_prov"}, nil
}

func (p *refreshingProvider) Invalidate(stale string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.invalidated = append(p.invalidated, stale)
	if stale == fmt.Sprintf("%s-%d", canary, p.gen) {
		p.gen++
	}
}

func (p *refreshingProvider) invalidations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.invalidated...)
}

var _ auth.Invalidator = (*refreshingProvider)(nil)

// handler answers the n-th request (counting from 1) a test server gets.
type handler func(w http.ResponseWriter, r *http.Request, n int32)

// newServer starts a test server that counts the requests it receives.
func newServer(t *testing.T, h handler) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	hits := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, hits.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// newClient returns a client for baseURL with the canary token, fast
// retries and a transport of its own whose idle connections are closed
// when the test ends.
func newClient(t *testing.T, baseURL string, mods ...func(*Config)) *Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	cfg := Config{
		BaseURL:   baseURL,
		Provider:  staticProvider(canary, "team_prov", "prj_prov"),
		Transport: tr,
		Retry:     fastRetry,
	}
	for _, m := range mods {
		m(&cfg)
	}
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

func withRetry(p RetryPolicy) func(*Config) { return func(c *Config) { c.Retry = p } }

func withProvider(p auth.Provider) func(*Config) { return func(c *Config) { c.Provider = p } }

// noSecret asserts that err, if any, does not reveal the token.
func noSecret(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		assert.NotContains(t, err.Error(), canary)
		assert.NotContains(t, fmt.Sprintf("%+v", err), canary)
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vercel-Id", "iad1::req-1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// hijackClose reads the whole request, then drops the connection without
// answering: the server may have acted, the client cannot know.
func hijackClose(t *testing.T, w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	hj, ok := w.(http.Hijacker)
	if !assert.True(t, ok) {
		return
	}
	conn, _, err := hj.Hijack()
	if assert.NoError(t, err) {
		_ = conn.Close()
	}
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

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

func TestGetRetriedAfter503RetryAfterZero(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int32) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			writeError(w, http.StatusServiceUnavailable, "unavailable", "try again")
			return
		}
		_, _ = io.WriteString(w, `{"name":"sbx"}`)
	})
	c := newClient(t, srv.URL)
	var out struct{ Name string }
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, &out))
	assert.Equal(t, "sbx", out.Name)
	assert.EqualValues(t, 2, hits.Load())
}

func TestRetryAfterHTTPDate(t *testing.T) {
	t.Parallel()
	t.Run("past date: retried at once", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int32) {
			if n == 1 {
				w.Header().Set("Retry-After", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})
		var waits []time.Duration
		c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			OnRetry: func(ev RetryEvent) { waits = append(waits, ev.Wait) }}))
		require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil))
		assert.EqualValues(t, 2, hits.Load())
		require.Len(t, waits, 1)
		assert.LessOrEqual(t, waits[0], 5*time.Millisecond)
	})
	t.Run("near date: its wait is honoured", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
			// HTTP dates have whole seconds: +3 s is between 2 and 3 s away.
			w.Header().Set("Retry-After", time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		// The wait is read from OnRetry, which then cancels the call so that
		// the test does not sleep.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var waits []time.Duration
		c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			OnRetry: func(ev RetryEvent) { waits = append(waits, ev.Wait); cancel() }}))
		err := c.JSON(ctx, &Call{Method: "GET", Path: "/v2/x"}, nil)
		assert.ErrorIs(t, err, context.Canceled)
		assert.EqualValues(t, 1, hits.Load())
		require.Len(t, waits, 1)
		assert.Greater(t, waits[0], 1900*time.Millisecond)
		assert.LessOrEqual(t, waits[0], 3*time.Second+5*time.Millisecond)
	})
	t.Run("far date: returned at once", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
			w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		c := newClient(t, srv.URL)
		err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, http.StatusServiceUnavailable, ae.StatusCode)
		assert.InDelta(t, time.Hour.Seconds(), ae.RetryAfter.Seconds(), 5)
		assert.EqualValues(t, 1, hits.Load())
	})
}

func TestServerErrorsExhausted(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
		writeError(w, http.StatusServiceUnavailable, "unavailable", "down")
	})
	c := newClient(t, srv.URL)
	err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/box", Query: map[string][]string{"projectId": {"p"}}, SandboxName: "box"}, nil)
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusServiceUnavailable, ae.StatusCode)
	assert.Equal(t, 3, ae.Attempts)
	assert.Equal(t, "unavailable", ae.Code)
	assert.Equal(t, "down", ae.Message)
	assert.Equal(t, "/v2/sandboxes/box", ae.Path)
	assert.ErrorIs(t, err, apierr.ErrServer)
	assert.NotErrorIs(t, err, apierr.ErrUnknownResult)
	assert.EqualValues(t, 3, hits.Load())
	noSecret(t, err)
}

func TestMaxRetries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		max  int
		want int32
	}{{-1, 1}, {0, 3}, {1, 2}, {4, 5}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) { w.WriteHeader(http.StatusInternalServerError) })
			c := newClient(t, srv.URL, withRetry(RetryPolicy{MaxRetries: tt.max, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
			err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, int(tt.want), ae.Attempts)
			assert.Equal(t, tt.want, hits.Load())
		})
	}
}

// "A run-command POST (Unsafe) is not re-sent after a 500."
func TestUnsafeNotResentAfter500(t *testing.T) {
	t.Parallel()
	for _, status := range []int{500, 502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Retry-After", "0")
				writeError(w, status, "internal", "boom")
			})
			c := newClient(t, srv.URL)
			err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/sandboxes/sessions/sess_1/cmd",
				JSON: map[string]any{"command": "rm"}, Safety: Unsafe, Op: "run command",
				SandboxName: "box", SessionID: "sess_1"}, nil)
			assert.EqualValues(t, 1, hits.Load())
			var ou *apierr.OutcomeUnknownError
			require.ErrorAs(t, err, &ou)
			assert.ErrorIs(t, err, apierr.ErrUnknownResult)
			assert.Equal(t, "sess_1", ou.SessionID)
			assert.Equal(t, "box", ou.SandboxName)
			assert.Equal(t, "run command", ou.Op)
			assert.Equal(t, "POST", ou.Method)
			assert.Equal(t, "/v2/sandboxes/sessions/sess_1/cmd", ou.Path)
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, status, ae.StatusCode)
			assert.Equal(t, 1, ae.Attempts)
			assert.ErrorIs(t, err, apierr.ErrServer)
			noSecret(t, err)
		})
	}
}

func TestUnsafeRetriedAfter429(t *testing.T) {
	t.Parallel()
	var bodies []string
	srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if n == 1 {
			w.Header().Set("Retry-After", "0.01")
			writeError(w, http.StatusTooManyRequests, "rate_limited", "slow down")
			return
		}
		_, _ = io.WriteString(w, `{"command":{"id":"cmd_1"}}`)
	})
	c := newClient(t, srv.URL)
	var out struct{ Command struct{ ID string } }
	err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd",
		JSON: map[string]any{"command": "echo"}, Safety: Unsafe, SessionID: "s"}, &out)
	require.NoError(t, err)
	assert.Equal(t, "cmd_1", out.Command.ID)
	assert.EqualValues(t, 2, hits.Load())
	assert.Equal(t, []string{`{"command":"echo"}`, `{"command":"echo"}`}, bodies)
}

func TestRateLimitAboveCapReturnedAtOnce(t *testing.T) {
	t.Parallel()
	for _, safety := range []Safety{Idempotent, Unsafe} {
		t.Run(fmt.Sprint(safety), func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Retry-After", "60")
				writeError(w, http.StatusTooManyRequests, "rate_limited", "The concurrency limit has been exceeded.")
			})
			c := newClient(t, srv.URL)
			start := time.Now()
			err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: safety}, nil)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.EqualValues(t, 1, hits.Load())
			assert.ErrorIs(t, err, apierr.ErrRateLimited)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult)
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, 60*time.Second, ae.RetryAfter)
			assert.Equal(t, "rate_limited", ae.Code)
			assert.Contains(t, err.Error(), "retry after 1m0s")
			noSecret(t, err)
		})
	}
}

func TestRateLimitExhausted(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := newClient(t, srv.URL)
	err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: Unsafe}, nil)
	assert.EqualValues(t, 3, hits.Load())
	assert.ErrorIs(t, err, apierr.ErrRateLimited)
	assert.NotErrorIs(t, err, apierr.ErrUnknownResult, "a 429 proves the server did not act")
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 3, ae.Attempts)
}

func TestConnectionReset(t *testing.T) {
	t.Parallel()
	t.Run("unsafe POST is not re-sent", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) { hijackClose(t, w, r) })
		var retries atomic.Int32
		c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			OnRetry: func(RetryEvent) { retries.Add(1) }}))
		err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/sandboxes/sessions/sess_9/cmd",
			JSON: map[string]any{"command": "make"}, Safety: Unsafe, Op: "run command", SessionID: "sess_9"}, nil)
		assert.EqualValues(t, 1, hits.Load())
		assert.Zero(t, retries.Load())
		var ou *apierr.OutcomeUnknownError
		require.ErrorAs(t, err, &ou)
		assert.Equal(t, "sess_9", ou.SessionID)
		assert.Contains(t, err.Error(), "sess_9")
		var ae *apierr.Error
		assert.False(t, errors.As(err, &ae), "no answer, no APIError")
		noSecret(t, err)
	})
	t.Run("idempotent GET is retried", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
			if n == 1 {
				hijackClose(t, w, r)
				return
			}
			_, _ = io.WriteString(w, `{"ok":true}`)
		})
		var events []RetryEvent
		c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			OnRetry: func(ev RetryEvent) { events = append(events, ev) }}))
		var out struct{ OK bool }
		require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, &out))
		assert.True(t, out.OK)
		assert.EqualValues(t, 2, hits.Load())
		require.Len(t, events, 1)
		assert.Zero(t, events[0].StatusCode)
		assert.Error(t, events[0].Err)
	})
	t.Run("unsafe 2xx whose body breaks is an unknown outcome", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
			_, _ = io.Copy(io.Discard, r.Body)
			conn, buf, err := w.(http.Hijacker).Hijack()
			if !assert.NoError(t, err) {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"sandbox\":")
			_ = buf.Flush()
			_ = conn.Close()
		})
		c := newClient(t, srv.URL)
		err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: Unsafe,
			Op: "create sandbox", SandboxName: "box"}, &struct{}{})
		assert.EqualValues(t, 1, hits.Load())
		assert.ErrorIs(t, err, apierr.ErrUnknownResult)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		noSecret(t, err)
	})
}

func TestUnsafeDialErrorRetried(t *testing.T) {
	t.Parallel()
	var events []RetryEvent
	c := newClient(t, "http://"+closedAddr(t), withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		OnRetry: func(ev RetryEvent) { events = append(events, ev) }}))
	err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: Unsafe, Op: "create sandbox"}, nil)
	require.Error(t, err)
	require.Len(t, events, 2, "two retries after the first attempt")
	for i, ev := range events {
		assert.Equal(t, i+2, ev.Attempt)
		assert.Zero(t, ev.StatusCode)
		assert.Error(t, ev.Err)
	}
	assert.NotErrorIs(t, err, apierr.ErrUnknownResult, "nothing reached the server")
	var ou *apierr.OutcomeUnknownError
	assert.False(t, errors.As(err, &ou))
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	assert.Equal(t, "dial", op.Op)
	assert.NotContains(t, err.Error(), "teamId", "the query is not repeated in errors")
	noSecret(t, err)
}

func TestContextCancelledDuringBackoff(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		status int
		safety Safety
	}{
		{"GET after 503", http.StatusServiceUnavailable, Idempotent},
		{"unsafe POST after 429", http.StatusTooManyRequests, Unsafe},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(tt.status)
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second,
				OnRetry: func(RetryEvent) { cancel() }}))
			start := time.Now()
			err := c.JSON(ctx, &Call{Method: "POST", Path: "/v2/x", Safety: tt.safety}, nil)
			assert.Less(t, time.Since(start), 2*time.Second, "returns promptly")
			assert.ErrorIs(t, err, context.Canceled)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult, "the only attempt provably did nothing")
			assert.EqualValues(t, 1, hits.Load(), "no further hit")
		})
	}
}

func TestContextCancelledInFlight(t *testing.T) {
	t.Parallel()
	for _, safety := range []Safety{Idempotent, Unsafe} {
		t.Run(fmt.Sprint(safety), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			srv, hits := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ int32) {
				cancel()
				<-r.Context().Done()
			})
			c := newClient(t, srv.URL)
			err := c.JSON(ctx, &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", Safety: safety, SessionID: "s"}, nil)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, safety == Unsafe, errors.Is(err, apierr.ErrUnknownResult))
			assert.EqualValues(t, 1, hits.Load())
		})
	}
}

func TestContextAlreadyCancelled(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(http.ResponseWriter, *http.Request, int32) {})
	var asked atomic.Int32
	c := newClient(t, srv.URL, withProvider(auth.ProviderFunc(func(context.Context) (auth.Credentials, error) {
		asked.Add(1)
		return auth.Credentials{Token: canary}, nil
	})))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.JSON(ctx, &Call{Method: "GET", Path: "/v2/x"}, nil)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.Do(ctx, &Call{Method: "POST", Path: "/v2/x", OneShot: strings.NewReader("x"), Stream: true})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, hits.Load())
	assert.Zero(t, asked.Load())
}

func TestCredentialErrors(t *testing.T) {
	t.Parallel()
	errNoCreds := errors.New("no credentials configured")
	for _, safety := range []Safety{Idempotent, Unsafe} {
		t.Run(fmt.Sprint(safety), func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(http.ResponseWriter, *http.Request, int32) {})
			var asked atomic.Int32
			c := newClient(t, srv.URL, withProvider(auth.ProviderFunc(func(context.Context) (auth.Credentials, error) {
				asked.Add(1)
				return auth.Credentials{}, errNoCreds
			})))
			err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: safety}, nil)
			assert.ErrorIs(t, err, errNoCreds)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult, "nothing was sent")
			assert.Zero(t, hits.Load())
			assert.EqualValues(t, 1, asked.Load(), "not retried")
		})
	}
}

// Spec auth.md tests 29 and 30.
func TestUnauthorizedInvalidatesOnce(t *testing.T) {
	t.Parallel()
	bodies := []struct {
		name string
		call func() *Call
	}{
		{"JSON body", func() *Call {
			return &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", JSON: map[string]string{"command": "ls"}, Safety: Unsafe}
		}},
		{"reopenable body", func() *Call {
			return &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", Safety: Unsafe,
				Body: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(`{"command":"ls"}`)), nil }}
		}},
		{"no body", func() *Call { return &Call{Method: "GET", Path: "/v2/sandboxes/s"} }},
	}
	for _, b := range bodies {
		t.Run(b.name+"/second token accepted", func(t *testing.T) {
			t.Parallel()
			p := &refreshingProvider{}
			var mu sync.Mutex
			var got []string
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				data, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, r.Header.Get("Authorization")+"|"+r.URL.Query().Get("teamId")+"|"+string(data))
				mu.Unlock()
				if r.Header.Get("Authorization") != "Bearer "+canary+"-1" {
					writeError(w, http.StatusUnauthorized, "unauthorized", "token expired")
					return
				}
				_, _ = io.WriteString(w, `{"ok":true}`)
			})
			c := newClient(t, srv.URL, withProvider(p))
			call := b.call()
			var out struct{ OK bool }
			require.NoError(t, c.JSON(t.Context(), call, &out))
			assert.True(t, out.OK)
			assert.EqualValues(t, 2, hits.Load())
			assert.Equal(t, []string{canary + "-0"}, p.invalidations())
			want := ""
			if call.Method == "POST" {
				want = `{"command":"ls"}`
			}
			assert.Equal(t, []string{
				"Bearer " + canary + "-0|team_prov|" + want,
				"Bearer " + canary + "-1|team_prov|" + want,
			}, got, "body replayed on the retry")
		})
		t.Run(b.name+"/second 401 is an error", func(t *testing.T) {
			t.Parallel()
			p := &refreshingProvider{}
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				writeError(w, http.StatusUnauthorized, "unauthorized", "nope")
			})
			c := newClient(t, srv.URL, withProvider(p))
			err := c.JSON(t.Context(), b.call(), nil)
			assert.EqualValues(t, 2, hits.Load(), "no loop")
			assert.Equal(t, []string{canary + "-0"}, p.invalidations())
			assert.ErrorIs(t, err, apierr.ErrUnauthorized)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult)
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, http.StatusUnauthorized, ae.StatusCode)
			assert.Equal(t, "nope", ae.Message)
			noSecret(t, err)
		})
	}
}

func TestUnauthorizedNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider auth.Provider
		status   int
		call     Call
	}{
		{"provider without Invalidate", staticProvider(canary, "t", "p"), http.StatusUnauthorized,
			Call{Method: "GET", Path: "/v2/x"}},
		{"403 is not an auth refresh signal", &refreshingProvider{}, http.StatusForbidden,
			Call{Method: "GET", Path: "/v2/x"}},
		{"one-shot body cannot be replayed", &refreshingProvider{}, http.StatusUnauthorized,
			Call{Method: "POST", Path: "/v2/x", OneShot: io.LimitReader(strings.NewReader("payload"), 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				_, _ = io.Copy(io.Discard, r.Body)
				writeError(w, tt.status, "forbidden", "no access")
			})
			c := newClient(t, srv.URL, withProvider(tt.provider))
			call := tt.call
			err := c.JSON(t.Context(), &call, nil)
			assert.EqualValues(t, 1, hits.Load())
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.status, ae.StatusCode)
			if p, ok := tt.provider.(*refreshingProvider); ok {
				assert.Empty(t, p.invalidations())
			}
			noSecret(t, err)
		})
	}
}

func TestAPIErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		code     string
		sentinel error
		not      []error
	}{
		{404, "not_found", apierr.ErrNotFound, []error{apierr.ErrGone}},
		{410, "sandbox_stopped", apierr.ErrGone, []error{apierr.ErrNotFound}},
		{422, "sandbox_stopping", apierr.ErrStopping, nil},
		{422, "sandbox_snapshotting", apierr.ErrStopping, nil},
		{422, "sandbox_timeout_invalid", nil, []error{apierr.ErrStopping}},
		{429, "rate_limited", apierr.ErrRateLimited, nil},
		{401, "unauthorized", apierr.ErrUnauthorized, []error{apierr.ErrForbidden}},
		{403, "forbidden", apierr.ErrForbidden, []error{apierr.ErrUnauthorized}},
		{400, "bad_request", apierr.ErrBadRequest, nil},
		{409, "conflict", apierr.ErrConflict, nil},
		{402, "payment_required", nil, []error{apierr.ErrServer}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.code), func(t *testing.T) {
			t.Parallel()
			var seenQuery string
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				seenQuery = r.URL.RawQuery
				w.Header().Set("Retry-After", "3600")
				writeError(w, tt.status, tt.code, "message for "+tt.code)
			})
			c := newClient(t, srv.URL)
			err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/box",
				Query: map[string][]string{"projectId": {"prj_q"}}, SandboxName: "box", SessionID: "sess_1"}, nil)
			assert.EqualValues(t, 1, hits.Load())
			assert.Contains(t, seenQuery, "projectId=prj_q")
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.status, ae.StatusCode)
			assert.Equal(t, tt.code, ae.Code)
			assert.Equal(t, "message for "+tt.code, ae.Message)
			assert.Equal(t, "iad1::req-1", ae.RequestID)
			assert.Equal(t, "GET", ae.Method)
			assert.Equal(t, "/v2/sandboxes/box", ae.Path, "no query in the path")
			assert.Equal(t, "box", ae.SandboxName)
			assert.Equal(t, "sess_1", ae.SessionID)
			assert.Equal(t, 1, ae.Attempts)
			assert.Equal(t, time.Hour, ae.RetryAfter)
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			}
			for _, s := range tt.not {
				assert.NotErrorIs(t, err, s)
			}
			msg := err.Error()
			assert.Contains(t, msg, fmt.Sprint(tt.status))
			assert.Contains(t, msg, tt.code)
			assert.Contains(t, msg, "iad1::req-1")
			assert.NotContains(t, msg, "prj_q")
			assert.NotContains(t, msg, "teamId")
			noSecret(t, err)
		})
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		status int
		maxLen int
		want   string
	}{
		{"1 MB of HTML", "<html><body>" + strings.Repeat("<p>gateway trouble</p>", 1<<20/22) + "</body></html>", http.StatusBadRequest, 520, "<html><body><p>gateway trouble</p>"},
		{"plain text", "  upstream connect error\n", http.StatusBadGateway, 520, "upstream connect error"},
		{"JSON without an error envelope", `{"detail":"x"}`, http.StatusConflict, 520, `{"detail":"x"}`},
		{"multi-byte rune at the cut", "a" + strings.Repeat("é", 600), http.StatusBadRequest, 520, "aéé"},
		{"empty", "", http.StatusNotFound, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			c := newClient(t, srv.URL, withRetry(RetryPolicy{MaxRetries: -1}))
			err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
			assert.EqualValues(t, 1, hits.Load())
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.status, ae.StatusCode)
			assert.Empty(t, ae.Code)
			assert.LessOrEqual(t, len([]rune(ae.Message)), tt.maxLen)
			assert.True(t, strings.HasPrefix(ae.Message, tt.want), "%.80q", ae.Message)
			assert.True(t, utf8Valid(ae.Message), "excerpt is valid UTF-8")
			assert.LessOrEqual(t, len(err.Error()), 700)
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestDecodeErrorOnMalformedJSON(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
		w.Header().Set("X-Vercel-Id", "iad1::req-7")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sandbox": {"name": `)
	})
	c := newClient(t, srv.URL)
	var out struct{ Sandbox struct{ Name string } }
	err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/x"}, &out)
	assert.EqualValues(t, 1, hits.Load(), "a 2xx is never retried")
	var de *apierr.DecodeError
	require.ErrorAs(t, err, &de)
	assert.ErrorIs(t, err, apierr.ErrDecode)
	assert.Equal(t, http.StatusCreated, de.StatusCode)
	assert.Equal(t, "iad1::req-7", de.RequestID)
	assert.Equal(t, "/v2/sandboxes/x", de.Path)
	assert.Equal(t, `{"sandbox": {"name":`, de.Excerpt)
	noSecret(t, err)
}

func TestEmptySuccessBodyDecodesAsEmptyObject(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusOK, http.StatusNoContent} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.WriteHeader(status)
				if status == http.StatusOK {
					_, _ = io.WriteString(w, " \n")
				}
			})
			c := newClient(t, srv.URL)
			out := map[string]any{"stale": 1}
			require.NoError(t, c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x/stop"}, &out))
			assert.Equal(t, map[string]any{"stale": 1.0}, normalize(out))
			var st struct{ Name string }
			require.NoError(t, c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x/stop"}, &st))
			assert.Empty(t, st.Name)
			require.NoError(t, c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x/stop"}, nil))
		})
	}
}

func normalize(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if i, ok := v.(int); ok {
			v = float64(i)
		}
		out[k] = v
	}
	return out
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	// trickle sends ten small chunks, 20 ms apart: 200 ms in all.
	trickle := func(w http.ResponseWriter, r *http.Request, _ int32) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		for i := range 10 {
			if i > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			_, _ = fmt.Fprintf(w, "{\"n\":%d}\n", i)
			w.(http.Flusher).Flush()
		}
	}
	withTimeout := func(c *Config) { c.RequestTimeout = 60 * time.Millisecond }

	t.Run("slow answer to a JSON call is cut", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(_ http.ResponseWriter, r *http.Request, _ int32) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		})
		c := newClient(t, srv.URL, withTimeout)
		start := time.Now()
		err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.EqualValues(t, 1, hits.Load(), "not retried after the deadline")
	})
	t.Run("trickling body of a JSON call is cut", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, trickle)
		c := newClient(t, srv.URL, withTimeout)
		err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("trickling body of a non-stream Do is cut", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, trickle)
		c := newClient(t, srv.URL, withTimeout)
		resp, err := c.Do(t.Context(), &Call{Method: "GET", Path: "/v2/x"})
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("stream call is not cut", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, trickle)
		c := newClient(t, srv.URL, withTimeout)
		resp, err := c.Do(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/sessions/s/cmd/c/logs", Stream: true})
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, 10, strings.Count(string(data), "\n"))
	})
	t.Run("stream call still ends with its context", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, trickle)
		c := newClient(t, srv.URL, withTimeout)
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := c.Do(ctx, &Call{Method: "GET", Path: "/v2/x", Stream: true})
		require.NoError(t, err)
		defer resp.Body.Close()
		cancel()
		_, err = io.ReadAll(resp.Body)
		assert.ErrorIs(t, err, context.Canceled)
	})
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
	resp, err := c.HTTPClient().Get(srv.URL + "/v2/x")
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
				assert.Equal(t, strings.TrimRight(tt.cfg.BaseURL, "/"), c.BaseURL())
				assert.NotNil(t, c.Logger())
				return
			}
			assert.Nil(t, c)
			var ie *apierr.InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tt.field, ie.Field)
			assert.ErrorIs(t, err, apierr.ErrInvalidInput)
			noSecret(t, err)
		})
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "api.localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true,
		"localhost.example.com": false, "example.com": false, "10.0.0.1": false, "0.0.0.0": false, "": false, "::": false,
	} {
		assert.Equal(t, want, IsLoopback(host), host)
	}
}

func TestOneShotBody(t *testing.T) {
	t.Parallel()
	t.Run("sent once on 503", func(t *testing.T) {
		t.Parallel()
		var got []string
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
			b, _ := io.ReadAll(r.Body)
			got = append(got, string(b)+"|"+r.Header.Get("Content-Type"))
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		var retries atomic.Int32
		c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
			OnRetry: func(RetryEvent) { retries.Add(1) }}))
		err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/fs/write",
			OneShot: io.LimitReader(strings.NewReader("tar-bytes"), 1<<20), ContentType: "application/gzip"}, nil)
		assert.EqualValues(t, 1, hits.Load())
		assert.Zero(t, retries.Load())
		assert.Equal(t, []string{"tar-bytes|application/gzip"}, got)
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, http.StatusServiceUnavailable, ae.StatusCode)
		assert.Equal(t, 1, ae.Attempts)
		noSecret(t, err)
	})
	t.Run("unsafe 5xx is an unknown outcome", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusInternalServerError)
		})
		c := newClient(t, srv.URL)
		err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x", OneShot: io.LimitReader(strings.NewReader("x"), 1),
			Safety: Unsafe, SessionID: "s"}, nil)
		assert.EqualValues(t, 1, hits.Load())
		assert.ErrorIs(t, err, apierr.ErrUnknownResult)
		assert.ErrorIs(t, err, apierr.ErrServer)
	})
	t.Run("success", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
			b, _ := io.ReadAll(r.Body)
			assert.Equal(t, "abc", string(b))
			assert.EqualValues(t, 3, r.ContentLength)
			_, _ = io.WriteString(w, `{"ok":true}`)
		})
		c := newClient(t, srv.URL)
		var out struct{ OK bool }
		require.NoError(t, c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x",
			OneShot: io.LimitReader(strings.NewReader("abc"), 3), ContentLength: 3}, &out))
		assert.True(t, out.OK)
	})
}

func TestReopenableBody(t *testing.T) {
	t.Parallel()
	t.Run("reopened for each attempt", func(t *testing.T) {
		t.Parallel()
		var got []string
		srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
			b, _ := io.ReadAll(r.Body)
			got = append(got, string(b))
			if n < 3 {
				w.WriteHeader(http.StatusBadGateway)
			}
		})
		c := newClient(t, srv.URL)
		require.NoError(t, c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x/fs/write",
			Body: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("payload")), nil }}, nil))
		assert.EqualValues(t, 3, hits.Load())
		assert.Equal(t, []string{"payload", "payload", "payload"}, got)
	})
	t.Run("open failure", func(t *testing.T) {
		t.Parallel()
		srv, hits := newServer(t, func(http.ResponseWriter, *http.Request, int32) {})
		errOpen := errors.New("source vanished")
		c := newClient(t, srv.URL)
		err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v2/x", Safety: Unsafe,
			Body: func() (io.ReadCloser, error) { return nil, errOpen }}, nil)
		assert.ErrorIs(t, err, errOpen)
		assert.NotErrorIs(t, err, apierr.ErrUnknownResult)
		assert.Zero(t, hits.Load())
	})
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 10, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"   ", 0, false},
		{"0", 0, true},
		{"5", 5 * time.Second, true},
		{" 7 ", 7 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"60", time.Minute, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"Mon, 10 Aug 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Monday, 10-Aug-26 12:01:00 GMT", time.Minute, true},
		{"Mon Aug 10 12:00:10 2026", 10 * time.Second, true},
		{"Mon, 10 Aug 2026 11:59:00 GMT", 0, true},
		{"Mon, 10 Aug 2026 12:00:00 GMT", 0, true},
		{"Mon, 32 Aug 2026 12:00:00 GMT", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, now)
		assert.Equal(t, tt.wantOK, ok, "%q", tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
}

func TestOnRetryEvents(t *testing.T) {
	t.Parallel()
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int32) {
		switch n {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			_, _ = io.WriteString(w, `{}`)
		}
	})
	var events []RetryEvent
	c := newClient(t, srv.URL, withRetry(RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		OnRetry: func(ev RetryEvent) { events = append(events, ev) }}))
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/sessions/s/cmd/c",
		Query: map[string][]string{"wait": {"true"}}}, nil))
	assert.EqualValues(t, 3, hits.Load())
	require.Len(t, events, 2)
	for i, want := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		ev := events[i]
		assert.Equal(t, i+2, ev.Attempt)
		assert.Equal(t, want, ev.StatusCode)
		assert.Equal(t, "GET", ev.Method)
		assert.Equal(t, "/v2/sandboxes/sessions/s/cmd/c", ev.Path)
		assert.NoError(t, ev.Err)
		assert.Positive(t, ev.Wait)
		assert.LessOrEqual(t, ev.Wait, 5*time.Millisecond)
	}
}

func TestBackoffJitter(t *testing.T) {
	t.Parallel()
	base, maxD := 100*time.Millisecond, 10*time.Second
	for n, lo := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		for range 50 {
			d := jitter(base, maxD, n)
			assert.GreaterOrEqual(t, d, lo)
			assert.Less(t, d, 2*lo)
		}
	}
	assert.Equal(t, maxD, jitter(base, maxD, 20), "capped")
	assert.Equal(t, maxD, jitter(base, maxD, 1000), "no overflow")
}

// captureHandler keeps every slog record.
type captureHandler struct {
	mu   *sync.Mutex
	recs *[]slog.Record
}

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, r.Clone())
	return nil
}

func (h captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h captureHandler) WithGroup(string) slog.Handler      { return h }

func TestRetryIsLogged(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int32) {
		if n == 1 {
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	var mu sync.Mutex
	var recs []slog.Record
	c := newClient(t, srv.URL, func(c *Config) { c.Logger = slog.New(captureHandler{&mu, &recs}) })
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "DELETE", Path: "/v2/sandboxes/box"}, nil))

	mu.Lock()
	defer mu.Unlock()
	var retry *slog.Record
	for i := range recs {
		r := &recs[i]
		r.Attrs(func(a slog.Attr) bool {
			assert.NotContains(t, a.Value.String(), canary)
			return true
		})
		assert.NotContains(t, r.Message, canary)
		if strings.Contains(r.Message, "retrying request") {
			retry = r
		}
	}
	require.NotNil(t, retry, "a retrying request record")
	assert.Equal(t, slog.LevelWarn, retry.Level)
	attrs := map[string]string{}
	retry.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	assert.Equal(t, "DELETE", attrs["method"])
	assert.Equal(t, "/v2/sandboxes/box", attrs["path"])
	assert.Equal(t, "2", attrs["attempt"])
	assert.Equal(t, "502", attrs["status"])
	assert.Contains(t, attrs, "wait")
}

// Every failing case above also checks noSecret; this one gathers the
// failure kinds in one place.
func TestErrorsNeverContainToken(t *testing.T) {
	t.Parallel()
	type scenario struct {
		name    string
		handler handler
		call    Call
		base    string
		timeout time.Duration
	}
	status := func(code int) handler {
		return func(w http.ResponseWriter, r *http.Request, _ int32) {
			_, _ = io.Copy(io.Discard, r.Body)
			writeError(w, code, "code", "message")
		}
	}
	scenarios := []scenario{
		{name: "400", handler: status(400), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "401", handler: status(401), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "403", handler: status(403), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "404", handler: status(404), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "429", handler: status(429), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "503 exhausted", handler: status(503), call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "unsafe 500", handler: status(500), call: Call{Method: "POST", Path: "/v2/x", JSON: 1, Safety: Unsafe}},
		{name: "HTML", handler: func(w http.ResponseWriter, _ *http.Request, _ int32) {
			w.WriteHeader(400)
			_, _ = io.WriteString(w, "<html>bad</html>")
		}, call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "decode", handler: func(w http.ResponseWriter, _ *http.Request, _ int32) { _, _ = io.WriteString(w, "{") },
			call: Call{Method: "GET", Path: "/v2/x"}},
		{name: "reset", handler: func(w http.ResponseWriter, r *http.Request, _ int32) { hijackClose(t, w, r) },
			call: Call{Method: "POST", Path: "/v2/x", JSON: 1, Safety: Unsafe}},
		{name: "timeout", handler: func(_ http.ResponseWriter, r *http.Request, _ int32) { <-r.Context().Done() },
			call: Call{Method: "GET", Path: "/v2/x"}, timeout: 20 * time.Millisecond},
		{name: "dial", base: "http://" + closedAddr(t), call: Call{Method: "GET", Path: "/v2/x"}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			base := sc.base
			if base == "" {
				srv, _ := newServer(t, sc.handler)
				base = srv.URL
			}
			c := newClient(t, base, func(c *Config) { c.RequestTimeout = sc.timeout })
			call := sc.call
			err := c.JSON(t.Context(), &call, &struct{}{})
			require.Error(t, err)
			noSecret(t, err)
		})
	}
}
