package httpcore

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

const forever = time.Duration(math.MaxInt64)

// With no cap on Retry-After, a huge one is a wait as long as a Duration
// can be, never a sum that wraps around to no wait at all. The wait is read
// from OnRetry, which cancels the call: nothing sleeps.
func TestHugeRetryAfterSaturates(t *testing.T) {
	t.Parallel()
	for _, ra := range []string{"99999999999999999", "9223372036.854775", "1e300", "Inf"} {
		t.Run(ra, func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				w.Header().Set("Retry-After", ra)
				w.WriteHeader(http.StatusTooManyRequests)
			})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var waits []time.Duration
			c := newClient(t, srv.URL, withRetry(RetryPolicy{MaxRetryAfter: forever,
				OnRetry: func(ev RetryEvent) { waits = append(waits, ev.Wait); cancel() }}))
			err := c.JSON(ctx, &Call{Method: "GET", Path: "/v2/x"}, nil)
			assert.ErrorIs(t, err, context.Canceled)
			require.Len(t, waits, 1)
			assert.Equal(t, forever, waits[0], "the wait saturates")
			assert.EqualValues(t, 1, hits.Load(), "no attempt without the wait")
		})
	}
}

// A caller's own retry (Pause) adds Retry-After to the backoff the same way.
func TestPauseSaturates(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var waits []time.Duration
	c := newClient(t, "http://127.0.0.1:1", withRetry(RetryPolicy{MaxRetryAfter: forever,
		OnRetry: func(ev RetryEvent) { waits = append(waits, ev.Wait); cancel() }}))
	err := c.Pause(ctx, RetryEvent{Attempt: 2, Err: &apierr.Error{StatusCode: 429, RetryAfter: forever - time.Millisecond}})
	assert.ErrorIs(t, err, context.Canceled, "Pause waited")
	require.Len(t, waits, 1)
	assert.Equal(t, forever, waits[0])
}

// The backoff itself saturates at its cap, however large the cap.
func TestBackoffSaturates(t *testing.T) {
	t.Parallel()
	for n := range 40 {
		d := Backoff(time.Hour, forever, n)
		assert.Positive(t, d, "retry %d", n)
	}
	assert.Equal(t, forever, Backoff(time.Hour, forever, 30))
}
