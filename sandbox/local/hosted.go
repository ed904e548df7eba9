package local

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// By default the server answers the way hosted Vercel does, not the way
// the API reference or the official mock suggest; each difference is
// listed, with its source, in the package documentation ("Hosted Vercel,
// not the mock"). WithFriendly turns them all off, for tests that need the
// older, kinder answers.

// DefaultStreamCut is how long a stream lives before the server cuts it,
// as hosted Vercel's edge does (28 recorded runs were cut between 363 and
// 428 seconds).
const DefaultStreamCut = 6 * time.Minute

// hostedMaxTimeout is the longest session timeout hosted Vercel accepts.
const hostedMaxTimeout = 24 * time.Hour

// clockPoll is how often a stream looks at an injected clock, which cannot
// wake it, to see whether its time is up.
const clockPoll = 2 * time.Millisecond

// errEdgeCut is the cause of a stream's context when the edge cuts it.
var errEdgeCut = errors.New("local: stream cut by the edge")

// WithFriendly turns off the emulation of hosted Vercel: streams are never
// cut, a command whose session ends gets a final frame with exit code 137
// rather than an error frame, output and commands of a stopped session
// stay readable, kill signals the command's process group, and so on (see
// "Hosted Vercel, not the mock" in the package documentation).
func WithFriendly() Option { return func(c *config) { c.friendly = true } }

// WithStreamCut sets how long a stream (an attached run, a log stream, a
// wait) lives before the server cuts it without its final frame, measured
// on the server's clock (see WithClock). Zero means DefaultStreamCut; a
// negative value never cuts. WithFriendly never cuts either.
func WithStreamCut(d time.Duration) Option { return func(c *config) { c.streamCut = d } }

// hosted reports whether the server emulates hosted Vercel.
func (s *Server) hosted() bool { return !s.cfg.friendly }

// edge is the life of one stream at hosted Vercel's edge. Its context is
// the request's, cancelled with cause errEdgeCut once the stream has lived
// as long as the edge lets it: a timer does that on the real clock, a
// watcher of an injected clock (which wakes nobody when it moves)
// otherwise, and over checks the clock at once before each frame.
type edge struct {
	ctx      context.Context
	cancel   context.CancelCauseFunc
	s        *Server
	deadline time.Time // zero: never cut
	release  func()
}

// newEdge starts the edge of a stream answering r; call stop when done.
func (s *Server) newEdge(r *http.Request) *edge {
	ctx, cancel := context.WithCancelCause(r.Context())
	e := &edge{ctx: ctx, cancel: cancel, s: s, release: func() {}}
	d := s.cfg.streamCut
	if d == 0 {
		d = DefaultStreamCut
	}
	if !s.hosted() || d < 0 {
		return e
	}
	// The stream's life counts from its arrival, as the request log saw it.
	start := s.now()
	if entry, ok := r.Context().Value(entryKey{}).(*reqEntry); ok {
		start = entry.req.Time
	}
	e.deadline = start.Add(d)
	if s.realClock {
		t := time.AfterFunc(d, func() { cancel(errEdgeCut) })
		e.release = func() { t.Stop() }
		return e
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(clockPoll)
		defer t.Stop()
		for !e.over() {
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	e.release = func() { <-done }
	return e
}

// over reports whether the edge has cut the stream, cutting it when its
// time is up.
func (e *edge) over() bool {
	if !e.deadline.IsZero() && !e.s.now().Before(e.deadline) {
		e.cancel(errEdgeCut)
	}
	return errors.Is(context.Cause(e.ctx), errEdgeCut)
}

// stop releases the edge's timer or watcher.
func (e *edge) stop() {
	e.cancel(nil)
	e.release()
}

// cutConnection ends the answer the way the edge does: the connection is
// dropped, without a final frame (or, before the headers, without any
// answer).
func cutConnection() { panic(http.ErrAbortHandler) }

// awaitHosted answers a wait the way hosted Vercel does: nothing, not even
// the headers, until the command ends; the edge cuts a wait that lasts too
// long, and a command ended by the end of its session answers 410.
func (s *Server) awaitHosted(w http.ResponseWriter, r *http.Request, c *commandRec) *apiError {
	e := s.newEdge(r)
	defer e.stop()
	if !s.awaitCommand(e.ctx, c) || e.over() {
		if e.over() {
			cutConnection()
		}
		return nil
	}
	if s.endedWithSession(c) {
		return statusError(statusStopped)
	}
	return s.writeLocked(w, func() any { return wire.CommandResponse{Command: commandWire(c)} })
}

// endedWithSession reports whether c was still running when its session
// ended, so that its stream ends with sandbox_stream_closed (hosted) rather
// than a final frame.
func (s *Server) endedWithSession(c *commandRec) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.sessionEnded
}

// streamClosed is the error frame hosted Vercel sends when the session of
// an attached command ends.
var streamClosed = errorLine{Stream: "error", Data: wire.StreamErrorData{Code: "sandbox_stream_closed",
	Message: "Sandbox stream was closed and is not accepting commands."}}

// errorLine is the error frame that ends a stream, data first as hosted
// Vercel writes it.
type errorLine struct {
	Data   wire.StreamErrorData `json:"data"`
	Stream string               `json:"stream"`
}

// hostedLogLine is a log line as hosted Vercel writes it: data first.
type hostedLogLine struct {
	Data   string `json:"data"`
	Stream string `json:"stream"`
}

// logFrame returns the line of one output frame in the server's style.
func (s *Server) logFrame(f outFrame) any {
	if s.hosted() {
		return hostedLogLine{Data: f.data, Stream: f.stream}
	}
	return logLine{Stream: f.stream, Data: f.data}
}

// goneAfterStop answers 410 for a command of a session that has ended, as
// hosted Vercel does for getCommand and logs (the official mock keeps
// serving them).
func (s *Server) goneAfterStop(c *commandRec) *apiError {
	if !s.hosted() {
		return nil
	}
	s.mu.Lock()
	status := c.sess.status
	s.mu.Unlock()
	switch status {
	case statusRunning, statusStopping, statusSnapshotting:
		return nil
	}
	return statusError(statusStopped)
}

// WithLogsRace makes the logs of a command answer 404 for d after the
// command ends, measured on the server's clock (see WithClock), as hosted
// Vercel's logs sometimes do while they race the command's cleanup
// (getsentry/junior#992). Zero (the default) never races; WithFriendly
// never does either.
func WithLogsRace(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.invalid("WithLogsRace", "negative duration %s", d)
		}
		c.logsRace = d
	}
}

// logsRaceCleanup answers 404 for the logs of a command that ended less
// than the WithLogsRace window ago.
func (s *Server) logsRaceCleanup(c *commandRec) *apiError {
	if !s.hosted() || s.cfg.logsRace <= 0 {
		return nil
	}
	s.mu.Lock()
	ended, at := c.exitCode != nil, c.endedAt
	s.mu.Unlock()
	if !ended || s.nowMs()-at >= s.cfg.logsRace.Milliseconds() {
		return nil
	}
	return notFound("Command %s not found.", c.id)
}

// WithFreshTokenRefusals makes the server refuse the first n requests that
// carry a token it has not seen before with 401, as hosted Vercel briefly
// refuses a freshly minted or refreshed token (vercel/sandbox#192, #247).
// Zero (the default) refuses none; WithFriendly never does.
func WithFreshTokenRefusals(n int) Option {
	return func(c *config) {
		if n < 0 {
			c.invalid("WithFreshTokenRefusals", "negative count %d", n)
		}
		c.freshRefusals = n
	}
}

// tokenUses counts the requests each token has made.
type tokenUses struct {
	mu   sync.Mutex
	uses map[string]int
}

// freshTokenRefused counts a use of tok and reports whether it is one of
// its first WithFreshTokenRefusals uses.
func (s *Server) freshTokenRefused(tok string) bool {
	if !s.hosted() || s.cfg.freshRefusals <= 0 {
		return false
	}
	u := &s.tokens
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.uses == nil {
		u.uses = make(map[string]int)
	}
	u.uses[tok]++
	return u.uses[tok] <= s.cfg.freshRefusals
}

// WithEarlyStops makes a stop and a snapshot answer before the session has
// stopped, as hosted Vercel may: a stop answers with the session still
// stopping and the sandbox's old currentSnapshotId (superset-sh/superset,
// docs/cloud-sandbox-mismatches.md; vercel/sandbox#159 says a stop
// blocks), and a snapshot answers 201 with the snapshot taken and the
// session still snapshotting. The session stops just after the answer;
// until then lifecycle calls wait and session calls answer 422.
// WithFriendly never answers early.
func WithEarlyStops() Option { return func(c *config) { c.earlyStops = true } }

// stopEarly answers a stop of a running session at once, with the session
// stopping, and finishes the stop in the background. It reports false,
// answering nothing, when it does not apply.
func (s *Server) stopEarly(w http.ResponseWriter, sess *sessionRec) bool {
	if !s.cfg.earlyStops || !s.hosted() {
		return false
	}
	sess.sb.lc.Lock()
	takeSnap, ok := s.beginStop(sess, stopRequested, nil)
	if !ok {
		sess.sb.lc.Unlock()
		return false
	}
	reply := s.stopReply(sess, nil)
	s.finishLater(sess, func() { s.quiesce(sess, takeSnap, nil) })
	writeJSON(w, http.StatusOK, reply)
	return true
}

// snapshotEarly takes the snapshot of a running session and answers with
// it still snapshotting; it stops in the background. The caller holds sess.sb.lc,
// which the background releases.
func (s *Server) snapshotEarly(sess *sessionRec, params *snapshotParams) wire.SnapshotResponse {
	s.beginStop(sess, stopRequested, params)
	reply := s.snapshotReply(sess, s.quiesce(sess, true, params))
	s.finishLater(sess, func() {})
	return reply
}

// finishLater runs rest, marks sess stopped and releases sess.sb.lc, in
// the background.
func (s *Server) finishLater(sess *sessionRec, rest func()) {
	s.wg.Go(func() {
		defer sess.sb.lc.Unlock()
		rest()
		s.mu.Lock()
		s.markStopped(sess, s.nowMs())
		s.mu.Unlock()
	})
}

// defaultRateLimit is the request budget the x-ratelimit-* headers report
// when no create limit is set.
const defaultRateLimit = 1000

// WithCreateRateLimit limits creates (and forks) to n per window of the
// server's clock, as hosted Vercel limits them (20 a minute): beyond it a
// create answers 429 with Retry-After and x-ratelimit-* headers until the
// window resets. Zero n (the default) sets no limit.
func WithCreateRateLimit(n int, window time.Duration) Option {
	return func(c *config) {
		if n < 0 || (n > 0 && window <= 0) {
			c.invalid("WithCreateRateLimit", "want n ≥ 0 creates per positive window, got %d per %s", n, window)
		}
		c.createLimit, c.createWindow = n, window
	}
}

// rateLimiter counts creates per fixed window.
type rateLimiter struct {
	mu    sync.Mutex
	start time.Time
	used  int
}

// rateHeaders sets the x-ratelimit-* headers hosted Vercel sends on every
// answer. A create (take) uses one request of the window; it reports false
// when the window has none left.
func (s *Server) rateHeaders(h http.Header, take bool) bool {
	if !s.hosted() {
		return true
	}
	limit, window := s.cfg.createLimit, s.cfg.createWindow
	if limit <= 0 {
		limit = defaultRateLimit
	}
	if window <= 0 {
		window = time.Minute
	}
	now := s.now()
	l := &s.limiter
	l.mu.Lock()
	if l.start.IsZero() || !now.Before(l.start.Add(window)) {
		l.start, l.used = now, 0
	}
	ok := true
	if take && s.cfg.createLimit > 0 {
		if l.used >= limit {
			ok = false
		} else {
			l.used++
		}
	}
	remaining, reset := max(0, limit-l.used), l.start.Add(window)
	l.mu.Unlock()
	h.Set("X-Ratelimit-Limit", strconv.Itoa(limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	if !ok {
		h.Set("Retry-After", strconv.Itoa(int(max(time.Second, reset.Sub(now)).Seconds())))
	}
	return ok
}

// jwtExpired reports whether tok is a JWT whose exp has passed at now.
// Its signature is not checked: the server does not issue JWTs.
func jwtExpired(tok string, now time.Time) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return false
	}
	return !now.Before(time.Unix(int64(*claims.Exp), 0))
}

// expiredToken is the answer to an expired token: 403 with invalidToken
// on hosted Vercel (vercel/sandbox#192, #247), 401 with WithFriendly.
func (s *Server) expiredToken() *apiError {
	if !s.hosted() {
		return errorf(http.StatusUnauthorized, "unauthorized", "The token has expired")
	}
	return &apiError{status: http.StatusForbidden, code: codeForbidden,
		message: "Not authorized", extra: map[string]any{"invalidToken": true}}
}

// envTooLarge refuses an env object above hosted Vercel's limit.
func (s *Server) envTooLarge(env map[string]string) *apiError {
	if !s.hosted() || wire.EnvPayloadSize(env) <= wire.MaxEnvPayload {
		return nil
	}
	return badRequest("env payload too large")
}
