package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// A create is not safe to send twice: the first may have made the sandbox
// even when its answer was lost. So Create names every sandbox (a random
// name when the caller gave none), and when a create's outcome is unknown
// (a 5xx answer, a connection lost after sending) it looks the name up
// before anything else: a sandbox found is the one that create made and is
// returned; only a name not found is created again. A name refused as taken
// after an unknown outcome is likewise the sandbox an earlier attempt made.
// What is provably safe to resend (a 429, a failed dial) is retried by the
// HTTP core itself.

// Create creates a sandbox and boots its first session. It uses
// POST /v2/sandboxes when p.Runtime is set and POST /v3/sandboxes otherwise.
//
// Create is safe to retry and never makes two sandboxes: an empty p.Name
// is replaced with a random one (see NewName), and a create whose outcome
// is unknown is resolved by looking the name up, then sent again (within
// the client's RetryPolicy, reported to its OnRetry) only when no sandbox
// has that name. A sandbox that existed under p.Name before the call is
// refused (ErrConflict or ErrBadRequest), never adopted; use GetOrCreate to
// reuse one. When the outcome stays unknown, the error is an
// *OutcomeUnknownError.
func (c *Client) Create(ctx context.Context, p CreateParams) (*Sandbox, error) {
	ctx, op := c.start(ctx, observe.OpCreate)
	sb, err := c.create(ctx, p)
	endSandbox(op, sb, err)
	return sb, err
}

func (c *Client) create(ctx context.Context, p CreateParams) (*Sandbox, error) {
	if p.Name == "" {
		p.Name = NewName("sbx-")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	project, err := c.project(ctx)
	if err != nil {
		return nil, err
	}
	body, err := p.toWire(project)
	if err != nil {
		return nil, err
	}
	call := &httpcore.Call{Method: "POST", Path: "/v3/sandboxes", JSON: body, Safety: httpcore.Unsafe,
		Op: "create sandbox", SandboxName: p.Name}
	if p.Runtime != "" {
		call.Path = "/v2/sandboxes"
	}
	var (
		lastErr error
		unknown bool // an earlier attempt may have created the sandbox
	)
	for attempt := 1; attempt <= 1+c.core.MaxRetries(); attempt++ {
		if attempt > 1 {
			ev := httpcore.RetryEvent{Method: call.Method, Path: call.Path, Attempt: attempt, Err: lastErr}
			var ae *APIError
			if errors.As(lastErr, &ae) {
				ev.StatusCode = ae.StatusCode
			}
			if err := c.core.Pause(ctx, ev); err != nil {
				return nil, errors.Join(err, lastErr)
			}
			sb, err := c.Get(ctx, p.Name)
			if err == nil {
				return sb, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return nil, errors.Join(lastErr, err)
			}
		}
		var out wire.SandboxResponse
		err := c.core.JSON(ctx, call, &out)
		if err == nil {
			return c.newSandbox(&out), nil
		}
		if unknown && (errors.Is(err, ErrConflict) || errors.Is(err, ErrBadRequest)) {
			// The name is taken: by the sandbox an earlier attempt made.
			if sb, gerr := c.Get(ctx, p.Name); gerr == nil {
				return sb, nil
			}
		}
		lastErr = err
		if !errors.Is(err, ErrUnknownResult) {
			return nil, err
		}
		unknown = true
	}
	if ctx.Err() == nil {
		// The last attempt may have created the sandbox: find it rather
		// than leave it running unseen.
		if sb, err := c.Get(ctx, p.Name); err == nil {
			return sb, nil
		}
	}
	return nil, lastErr
}

// NewName returns a random sandbox name: prefix followed by 16 hex digits.
func NewName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return prefix + hex.EncodeToString(b[:])
}
