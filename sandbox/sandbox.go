package sandbox

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Sandbox is a handle to a named sandbox and its current session. It caches
// what the API last reported; methods that act on the session resume a
// stopped sandbox first when auto-resume is on. It is safe for concurrent
// use.
type Sandbox struct {
	c    *Client
	name string
	conn *conn.Conn // what package command runs commands over

	resumeMu sync.Mutex
	resumes  map[string]*resumeFlight // by the session it resumes from

	mu      sync.RWMutex
	info    Info
	session Session
	routes  []Route
}

func (c *Client) newSandbox(w *wire.SandboxResponse) *Sandbox {
	s := &Sandbox{c: c, name: w.Sandbox.Name}
	s.conn = &conn.Conn{Core: c.core, SandboxName: s.name, WithSession: s.withSession, Reattach: c.reattach}
	s.apply(w)
	return s
}

func (s *Sandbox) apply(w *wire.SandboxResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = infoFromWire(&w.Sandbox)
	s.session = sessionFromWire(&w.Session)
	if w.Routes != nil {
		s.routes = routesFromWire(w.Routes)
	}
}

// Name returns the sandbox's name.
func (s *Sandbox) Name() string { return s.name }

// Info returns the sandbox as last reported, without a request.
func (s *Sandbox) Info() Info {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.info
}

// Session returns the current session as last reported, without a request.
func (s *Sandbox) Session() Session {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.session
}

// Client returns the client the handle calls through.
func (s *Sandbox) Client() *Client { return s.c }

// SessionID returns the current session's id.
func (s *Sandbox) SessionID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.session.ID
}

// Routes returns the exposed ports as last reported.
func (s *Sandbox) Routes() []Route {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]Route(nil), s.routes...)
}

// Domain returns the public URL of an exposed port.
func (s *Sandbox) Domain(port int) (string, error) {
	for _, r := range s.Routes() {
		if r.Port == port {
			return "https://" + r.Subdomain + ".vercel.run", nil
		}
	}
	return "", apierr.Invalid("port", "port %d is not exposed by sandbox %s", port, s.name)
}

// Cwd returns the session's default working directory.
func (s *Sandbox) Cwd() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.session.Cwd != "" {
		return s.session.Cwd
	}
	return s.info.Cwd
}

// Refresh fetches the sandbox and its current session.
func (s *Sandbox) Refresh(ctx context.Context) error {
	out, err := s.c.get(ctx, s.name, false)
	if err != nil {
		return err
	}
	s.apply(out)
	return nil
}

// Resume boots a new session when the current one is not running, and
// returns it. Concurrent calls share one request.
func (s *Sandbox) Resume(ctx context.Context) (Session, error) {
	if err := s.resumeFrom(ctx, s.SessionID()); err != nil {
		return Session{}, err
	}
	return s.Session(), nil
}

// resumeFlight is one resume, shared by every caller that saw the same
// session fail.
type resumeFlight struct {
	done    chan struct{} // closed when the resume has ended
	err     error         // its outcome, once done is closed
	waiters int           // callers waiting for it; guarded by Sandbox.resumeMu
	cancel  context.CancelFunc
}

// resumeFrom resumes unless the session already moved on from staleID.
// Concurrent callers share one resume, which goes on while any of them
// waits for it (for at most 2 minutes) and ends when the last of them
// gives up: no request outlives every call that wanted it.
func (s *Sandbox) resumeFrom(ctx context.Context, staleID string) error {
	if cur := s.SessionID(); cur != staleID && cur != "" {
		return nil
	}
	s.resumeMu.Lock()
	f := s.resumes[staleID]
	if f == nil {
		// Not the first caller's context: the others share the resume.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		f = &resumeFlight{done: make(chan struct{}), cancel: cancel}
		if s.resumes == nil {
			s.resumes = map[string]*resumeFlight{}
		}
		s.resumes[staleID] = f
		go func() {
			defer close(f.done)
			f.err = s.resume(rctx, staleID)
			cancel()
			s.resumeMu.Lock()
			if s.resumes[staleID] == f {
				delete(s.resumes, staleID)
			}
			s.resumeMu.Unlock()
		}()
	}
	f.waiters++
	s.resumeMu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
	}
	s.resumeMu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last && s.resumes[staleID] == f {
		delete(s.resumes, staleID) // a later caller starts afresh
	}
	s.resumeMu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
	return ctx.Err()
}

// resume asks for the sandbox with resume=true, unless the session has
// moved on from staleID already (a caller saw it before an earlier resume
// ended), and applies the answer.
func (s *Sandbox) resume(ctx context.Context, staleID string) error {
	if cur := s.SessionID(); cur != staleID && cur != "" {
		return nil
	}
	ctx, op := s.c.start(ctx, observe.OpResume, slog.String(observe.KeySandbox, s.name),
		slog.String(observe.KeyOldSession, staleID))
	out, err := s.c.get(ctx, s.name, true)
	if err != nil {
		op.End(err)
		return err
	}
	s.apply(out)
	op.Set(slog.String(observe.KeySession, out.Session.ID), slog.Bool(observe.KeyResumed, out.Resumed))
	op.End(nil)
	if out.Resumed {
		s.c.core.Logger().LogAttrs(ctx, slog.LevelInfo, "vercel sandbox: resumed sandbox",
			slog.String("sandbox", s.name), slog.String("old_session", staleID), slog.String("session", out.Session.ID))
		if s.c.onResume != nil {
			s.c.onResume(ResumeEvent{SandboxName: s.name, OldSessionID: staleID, NewSessionID: out.Session.ID})
		}
	}
	return nil
}

// needsResume reports an answer that means the session is no longer
// usable and the call did not run: a 410, or a 422 while stopping or
// snapshotting. Stream errors never qualify.
func needsResume(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.StatusCode == 410 && ae.Code != "snapshot_not_found" || errors.Is(ae, ErrStopping)
}

// withSession runs fn against the current session. When auto-resume is on
// and the API refuses the call because the session stopped, it resumes and
// runs fn once more against the new session.
func (s *Sandbox) withSession(ctx context.Context, fn func(sessionID string) error) error {
	sid := s.SessionID()
	if sid == "" || (s.c.autoResume && s.Session().Status.Terminal()) {
		if !s.c.autoResume && sid == "" {
			return fmt.Errorf("vercel sandbox: sandbox %s has no session", s.name)
		}
		if s.c.autoResume {
			observe.Event(ctx, observe.EventResume, slog.String(observe.KeyOldSession, sid))
			if err := s.resumeFrom(ctx, sid); err != nil {
				return err
			}
			sid = s.SessionID()
		}
	}
	err := fn(sid)
	if err == nil || !s.c.autoResume || !needsResume(err) {
		return err
	}
	if errors.Is(err, ErrStopping) {
		// Hosted Vercel answers a stop or a snapshot while the session is
		// still stopping: a resume must wait for the stop to end.
		if _, werr := s.c.waitStopped(ctx, sid); werr != nil && !errors.Is(werr, ErrGone) {
			return fmt.Errorf("%w (waiting for the stop failed: %w)", err, werr)
		}
	}
	observe.Event(ctx, observe.EventResume, slog.String(observe.KeyOldSession, sid))
	if rerr := s.resumeFrom(ctx, sid); rerr != nil {
		// The resume's error comes first, for errors.As: it is the one to
		// act on (snapshot_not_found: recreate the sandbox). The refusal
		// that led to it stays in the chain, so errors.Is(err, ErrGone)
		// still says that the session stopped.
		return fmt.Errorf("%w (resuming after: %w)", rerr, err)
	}
	return fn(s.SessionID())
}

func (s *Sandbox) setSession(sess Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session.ID == sess.ID || s.session.ID == "" {
		s.session = sess
	}
}

// Stop stops the current session and waits until it has stopped (and, for
// a persistent sandbox, its filesystem is snapshotted). Stopping a stopped
// sandbox is not an error: the result has AlreadyStopped set. Stop never
// resumes.
func (s *Sandbox) Stop(ctx context.Context) (*StopResult, error) {
	ctx, op := s.c.start(ctx, observe.OpStop, slog.String(observe.KeySandbox, s.name))
	res, err := s.stop(ctx)
	endStop(op, res, err)
	return res, err
}

func (s *Sandbox) stop(ctx context.Context) (*StopResult, error) {
	sid := s.SessionID()
	if sid == "" {
		if err := s.Refresh(ctx); err != nil {
			return nil, err
		}
		sid = s.SessionID()
	}
	// The API may answer a stop of a stopped session with 200 and its
	// state (as the official mock does) instead of 410.
	wasStopped := s.Session().Status.Terminal()
	res, err := s.c.stopSession(ctx, sid, s.name)
	if err != nil {
		return nil, err
	}
	if wasStopped {
		res.AlreadyStopped = true
	}
	s.mu.Lock()
	if s.session.ID == sid {
		if res.AlreadyStopped && res.Session.ID == "" {
			s.session.Status = StatusStopped
		} else {
			s.session = res.Session
		}
	}
	if res.Sandbox != nil {
		s.info = *res.Sandbox
	} else {
		s.info.Status = StatusStopped
	}
	s.mu.Unlock()
	return res, nil
}

// stopPoll is how often WaitStopped looks at a session still stopping.
const stopPoll = 500 * time.Millisecond

// WaitStopped waits until the handle's session has really stopped, then
// refreshes the handle, so that Info reports the sandbox's current
// snapshot. Hosted Vercel may answer a stop of a persistent sandbox while
// the session is still stopping, with a stale CurrentSnapshotID; call
// WaitStopped after Stop when the next step needs that snapshot.
func (s *Sandbox) WaitStopped(ctx context.Context) (Session, error) {
	sess, err := s.c.waitStopped(ctx, s.SessionID())
	if err != nil {
		return Session{}, err
	}
	s.setSession(sess)
	return sess, s.Refresh(ctx)
}

// waitStopped polls a session until it has stopped.
func (c *Client) waitStopped(ctx context.Context, sessionID string) (Session, error) {
	for {
		sess, _, err := c.GetSession(ctx, sessionID)
		if err != nil || sess.Status.Terminal() {
			return sess, err
		}
		if err := httpcore.Sleep(ctx, stopPoll); err != nil {
			return Session{}, err
		}
	}
}

// ExtendTimeout adds d to the running session's timeout.
func (s *Sandbox) ExtendTimeout(ctx context.Context, d time.Duration) (Session, error) {
	var out Session
	err := s.withSession(ctx, func(sid string) error {
		sess, err := s.c.extend(ctx, sid, s.name, d)
		out = sess
		return err
	})
	if err == nil {
		s.setSession(out)
	}
	return out, err
}

// SetNetworkPolicy changes the running session's network policy.
func (s *Sandbox) SetNetworkPolicy(ctx context.Context, p *NetworkPolicy) (Session, error) {
	var out Session
	err := s.withSession(ctx, func(sid string) error {
		sess, err := s.c.setPolicy(ctx, sid, s.name, p)
		out = sess
		return err
	})
	if err == nil {
		s.setSession(out)
	}
	return out, err
}

// Update changes the sandbox's configuration. When it sets a longer
// Timeout or a NetworkPolicy, the running session is updated too (as the
// official SDK does); a session that stopped meanwhile is left alone.
func (s *Sandbox) Update(ctx context.Context, p UpdateParams) error {
	info, routes, err := s.c.Update(ctx, s.name, p)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.info = info
	if p.Ports != nil && routes != nil {
		s.routes = routes
	}
	sess := s.session
	s.mu.Unlock()
	ignorable := func(err error) bool { return err == nil || errors.Is(err, ErrGone) || errors.Is(err, ErrStopping) }
	if p.Timeout > 0 && sess.Status == StatusRunning && p.Timeout > sess.Timeout {
		ns, err := s.c.extend(ctx, sess.ID, s.name, p.Timeout-sess.Timeout)
		if !ignorable(err) {
			return err
		}
		if err == nil {
			s.setSession(ns)
		}
	}
	if p.NetworkPolicy != nil && sess.Status == StatusRunning {
		ns, err := s.c.setPolicy(ctx, sess.ID, s.name, p.NetworkPolicy)
		if !ignorable(err) {
			return err
		}
		if err == nil {
			s.setSession(ns)
		}
	}
	return nil
}

// Delete stops and deletes the sandbox.
func (s *Sandbox) Delete(ctx context.Context, p DeleteParams) error {
	return s.c.Delete(ctx, s.name, p)
}

// Snapshot snapshots the filesystem of the running session; the session
// stops once the snapshot is taken. Hosted Vercel may answer (201) while
// the session is still snapshotting: the snapshot's id is final, and
// WaitStopped waits until the session has stopped. A call that needs the
// session meanwhile (auto-resume) waits for the stop, then resumes.
func (s *Sandbox) Snapshot(ctx context.Context, p SnapshotParams) (Snapshot, error) {
	ctx, op := s.c.start(ctx, observe.OpSnapshot, slog.String(observe.KeySandbox, s.name))
	snap, err := s.snapshot(ctx, p)
	op.End(err)
	return snap, err
}

func (s *Sandbox) snapshot(ctx context.Context, p SnapshotParams) (Snapshot, error) {
	var snap Snapshot
	var sess *Session
	err := s.withSession(ctx, func(sid string) error {
		var err error
		snap, sess, err = s.c.snapshot(ctx, sid, s.name, p)
		return err
	})
	if err != nil {
		return Snapshot{}, err
	}
	s.mu.Lock()
	if sess != nil && sess.ID == s.session.ID {
		s.session = *sess
	}
	s.info.CurrentSnapshotID = snap.ID
	s.mu.Unlock()
	return snap, nil
}

// Fork creates a new sandbox from this one's configuration and snapshot.
func (s *Sandbox) Fork(ctx context.Context, p ForkParams) (*Sandbox, error) {
	return s.c.Fork(ctx, s.name, p)
}

// Sessions iterates over this sandbox's sessions, newest first.
func (s *Sandbox) Sessions(ctx context.Context) iter.Seq2[Session, error] {
	return s.c.ListSessions(ctx, PageParams{SandboxName: s.name})
}

// String returns the sandbox name and session id.
func (s *Sandbox) String() string { return "sandbox " + s.name + " (session " + s.SessionID() + ")" }
