package workload

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Defaults of RetryPolicy.
const (
	DefaultCreateAttempts = 3
	DefaultInitialBackoff = time.Second
	DefaultMaxBackoff     = 10 * time.Second
	// maxRetryAfter bounds how long a Retry-After answer may make us wait.
	maxRetryAfter = time.Minute
)

// RetryPolicy configures how Create retries. The zero value means 3 attempts
// with a jittered exponential backoff from 1 s up to 10 s.
type RetryPolicy struct {
	// Attempts is the total number of create attempts; 0 means 3 and 1
	// disables retries.
	Attempts int
	// InitialBackoff is the wait before the second attempt; it doubles for
	// each later one, up to MaxBackoff. Each wait is drawn uniformly from
	// [w/2, w] (jitter), and a longer Retry-After of a 429 answer is
	// honoured up to one minute.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// OnRetry, if set, is called before each wait.
	OnRetry func(attempt int, err error, wait time.Duration)
}

func (p RetryPolicy) attempts() int {
	if p.Attempts <= 0 {
		return DefaultCreateAttempts
	}
	return p.Attempts
}

// Backoff returns the wait before attempt n+1 after attempt n (n ≥ 1) failed,
// before jitter.
func (p RetryPolicy) Backoff(n int) time.Duration {
	initial, maxB := p.InitialBackoff, p.MaxBackoff
	if initial <= 0 {
		initial = DefaultInitialBackoff
	}
	if maxB <= 0 {
		maxB = DefaultMaxBackoff
	}
	if maxB < initial {
		maxB = initial
	}
	w := initial
	for i := 1; i < n && w < maxB; i++ {
		w *= 2
	}
	return min(w, maxB)
}

func (p RetryPolicy) wait(n int, err error) time.Duration {
	w := p.Backoff(n)
	w = w/2 + rand.N(w/2+1)
	var ae *sandbox.APIError
	if errors.As(err, &ae) && ae.RetryAfter > w {
		w = min(ae.RetryAfter, maxRetryAfter)
	}
	return w
}

// Transient reports whether err is a failure of sandbox creation that may
// succeed when tried again: 429 (rate limited), 5xx, an outcome-unknown
// create (see Create for how it is resolved) and network errors. Invalid
// input, authentication and every other 4xx answer, and the end of the
// caller's context, are not transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, sandbox.ErrUnknownResult) {
		return true
	}
	var ae *sandbox.APIError
	if errors.As(err, &ae) {
		return ae.StatusCode == 429 || ae.StatusCode >= 500
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// NewName returns a random sandbox name: prefix followed by 16 hex digits.
func NewName(prefix string) string {
	var b [8]byte
	_, _ = cryptorand.Read(b[:]) // never fails (crypto/rand panics instead)
	return prefix + hex.EncodeToString(b[:])
}

// Create creates a sandbox, retrying transient failures (see Transient) with
// a jittered exponential backoff, at most rp.Attempts times in all. It
// returns the sandbox and the number of create requests made.
//
// A create never produces two sandboxes. When p.Name is empty Create gives
// the sandbox a random name (NewName("wl-")), so that every attempt can be
// identified. When an attempt's outcome is unknown (the request may have
// reached the server: a 5xx answer, a connection lost after sending), the
// next attempt first looks the name up: a sandbox found under it is the one
// that attempt created and is returned; only when the name is not found is
// the create sent again. A name conflict (409, or 400 "already exists") on a
// later attempt likewise means an earlier attempt succeeded, and that
// sandbox is returned. A sandbox that already existed under a caller-chosen
// name before Create was called is refused on the first attempt and never
// adopted (use Acquire or sandbox.Client.GetOrCreate to reuse sandboxes).
//
// Failures are *Error with CodeCreationFailed, CodeInvalidInput (refused
// before sending), CodeTimeout or CodeCancelled (ctx ended).
func Create(ctx context.Context, c *sandbox.Client, p sandbox.CreateParams, rp RetryPolicy) (*sandbox.Sandbox, int, error) {
	if c == nil {
		return nil, 0, &Error{Code: CodeInvalidInput, Message: "no sandbox client given"}
	}
	if p.Name == "" {
		p.Name = NewName("wl-")
	}
	if err := p.Validate(); err != nil {
		return nil, 0, newError(CodeInvalidInput, err)
	}
	var (
		lastErr error
		unknown bool // an earlier attempt may have created the sandbox
		sent    int
	)
	for n := 1; n <= rp.attempts(); n++ {
		if n > 1 {
			w := rp.wait(n-1, lastErr)
			if rp.OnRetry != nil {
				rp.OnRetry(n-1, lastErr, w)
			}
			if err := sleep(ctx, w); err != nil {
				return nil, sent, classify(ctx, CodeCreationFailed, errors.Join(err, lastErr))
			}
		}
		if unknown {
			sb, err := c.Get(ctx, p.Name)
			if err == nil {
				return sb, sent, nil
			}
			if !errors.Is(err, sandbox.ErrNotFound) {
				lastErr = err
				if !Transient(err) {
					break
				}
				continue
			}
		}
		sent++
		sb, err := c.Create(ctx, p)
		if err == nil {
			return sb, sent, nil
		}
		// A name already taken is answered 409 or 400: after an unknown
		// outcome it is the sandbox an earlier attempt created.
		if unknown && (errors.Is(err, sandbox.ErrConflict) || errors.Is(err, sandbox.ErrBadRequest)) {
			if sb, gerr := c.Get(ctx, p.Name); gerr == nil {
				return sb, sent, nil
			}
		}
		lastErr = err
		if errors.Is(err, sandbox.ErrUnknownResult) {
			unknown = true
		}
		if !Transient(err) {
			break
		}
	}
	if unknown && ctx.Err() == nil {
		// The last attempt may have created the sandbox: find it rather
		// than leave it running unseen.
		if sb, err := c.Get(ctx, p.Name); err == nil {
			return sb, sent, nil
		}
	}
	return nil, sent, classify(ctx, CodeCreationFailed, lastErr)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
