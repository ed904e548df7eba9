package httpcore

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

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

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	resp := &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{
		"X-Ratelimit-Limit": {"20"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1700000045"}}}
	rl := parseRateLimit(resp.Header, now)
	require.NotNil(t, rl)
	assert.Equal(t, apierr.RateLimit{Limit: 20, Remaining: 0, Reset: time.Unix(1_700_000_045, 0)}, *rl)
	wait, ok := retryAfter(resp, now)
	assert.True(t, ok, "a 429 without Retry-After waits for the window")
	assert.Equal(t, 45*time.Second, wait)
	resp.StatusCode = http.StatusOK
	_, ok = retryAfter(resp, now)
	assert.False(t, ok, "only a 429 asks to wait for the window")
	assert.Nil(t, parseRateLimit(http.Header{}, now))
}
