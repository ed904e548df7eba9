package httpcore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// MaxRetries is how many times a call may be sent again after its first
// attempt, by Do or by a caller that repeats it itself.
func (c *Client) MaxRetries() int { return c.retry.MaxRetries }

// Pause waits before a caller sends a call again itself, outside Do's own
// retries (a create whose outcome was unknown is looked up, then re-sent).
// ev.Attempt is the attempt about to be made, 2 for the first retry. Pause
// sets ev.Wait with the backoff Do uses (or a longer Retry-After that
// ev.Err carries, up to MaxRetryAfter), logs and reports ev as Do reports
// its retries, and returns ctx's error if ctx ends first.
func (c *Client) Pause(ctx context.Context, ev RetryEvent) error {
	rp := c.retry
	ev.Wait = jitter(rp.BaseDelay, rp.MaxDelay, max(ev.Attempt-2, 0))
	var ae *apierr.Error
	if errors.As(ev.Err, &ae) && ae.RetryAfter > 0 && ae.RetryAfter <= rp.MaxRetryAfter {
		ev.Wait += ae.RetryAfter
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "vercel sandbox: retrying request",
		slog.String("method", ev.Method), slog.String("path", ev.Path),
		slog.Int("attempt", ev.Attempt), slog.Int("status", ev.StatusCode),
		slog.Any("error", ev.Err), slog.Duration("wait", ev.Wait))
	if rp.OnRetry != nil {
		rp.OnRetry(ev)
	}
	t := time.NewTimer(ev.Wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
