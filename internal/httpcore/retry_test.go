package httpcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
		got, ok := parseRetryAfter(tt.in, now)
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

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, maxD := 100*time.Millisecond, 10*time.Second
	for n, lo := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		for range 50 {
			d := Backoff(base, maxD, n)
			assert.GreaterOrEqual(t, d, lo)
			assert.Less(t, d, 2*lo)
		}
	}
	assert.Equal(t, maxD, Backoff(base, maxD, 20), "capped")
	assert.Equal(t, maxD, Backoff(base, maxD, 1000), "no overflow")
}

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

// The retry rules, one row each, without a server.
func TestShouldRetry(t *testing.T) {
	t.Parallel()
	answer := func(status int, retryAfter string) *http.Response {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &http.Response{StatusCode: status, Header: h}
	}
	dial := &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	reset := &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}
	tests := []struct {
		name      string
		safety    Safety
		resp      *http.Response
		err       error
		wantRetry bool
		wantWait  time.Duration
	}{
		{"idempotent, 503", Idempotent, answer(503, ""), nil, true, 0},
		{"idempotent, 503 asks for 2s", Idempotent, answer(503, "2"), nil, true, 2 * time.Second},
		{"idempotent, 503 asks for too long", Idempotent, answer(503, "60"), nil, false, 0},
		{"unsafe, 500", Unsafe, answer(500, ""), nil, false, 0},
		{"unsafe, 429", Unsafe, answer(429, "1"), nil, true, time.Second},
		{"429 asks for too long", Idempotent, answer(429, "3600"), nil, false, 0},
		{"400", Idempotent, answer(400, ""), nil, false, 0},
		{"idempotent, reset", Idempotent, nil, reset, true, 0},
		{"unsafe, reset", Unsafe, nil, reset, false, 0},
		{"unsafe, dial error", Unsafe, nil, dial, true, 0},
		{"credentials", Idempotent, nil, &credentialError{err: errors.New("no token")}, false, 0},
		{"plain http", Idempotent, nil, errInsecure, false, 0},
		{"cancelled", Idempotent, nil, context.Canceled, false, 0},
	}
	for _, tt := range tests {
		p := &retryPolicy{call: &Call{Safety: tt.safety}, conf: RetryPolicy{}.withDefaults()}
		retry, wait := p.shouldRetry(tt.resp, tt.err)
		assert.Equal(t, tt.wantRetry, retry, tt.name)
		assert.Equal(t, tt.wantWait, wait, tt.name)
	}
}
