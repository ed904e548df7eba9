package pty

import (
	"context"
	"errors"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// A session stops at its timeout, whether a terminal is open or not, and
// sandbox connect extends it while its terminal is open. Start does the
// same without comparing its clock with the server's: when the terminal
// opens it extends the timeout by twice the interval, then by the
// interval every interval. So while the terminal is open the session has
// at least one interval left (when the extensions succeed), whatever its
// timeout was, and once the terminal closes it ends at most two intervals
// later than it would have.
//
// The extensions go to the session the ticket was issued for, through
// Client.ExtendSessionTimeout. Sandbox.ExtendTimeout would resume a sandbox whose
// session has stopped, and a keep-alive must never start a session.

// defaultKeepAlive is how often sandbox connect extends a session, and by
// how much.
const defaultKeepAlive = 5 * time.Minute

// keepAlive extends one session's timeout.
type keepAlive struct {
	client    *sandbox.Client
	sessionID string
	every     time.Duration
}

func (k *keepAlive) extend(ctx context.Context, d time.Duration) error {
	_, err := k.client.ExtendSessionTimeout(ctx, k.sessionID, d)
	return err
}

// keepAlive extends the session's timeout every k.every until the
// session ends, or the API answers that the session is stopping or has
// stopped.
func (s *Session) keepAlive(k *keepAlive) {
	defer close(s.keepDone)
	tick := time.NewTicker(k.every)
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		err := k.extend(s.ctx, k.every)
		if s.ctx.Err() != nil {
			return // the session ended meanwhile: the failure is not one
		}
		switch {
		case err == nil:
			s.keepErr = nil
		case s.keepErr == nil:
			// The first failure since the last success: those after
			// it may be its consequences (the session stopped).
			s.keepErr = s.tok.err(err)
		}
		if errors.Is(err, sandbox.ErrGone) || errors.Is(err, sandbox.ErrStopping) {
			return
		}
	}
}
