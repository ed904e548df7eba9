package httpcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

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
