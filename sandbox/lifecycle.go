package sandbox

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

func sandboxPath(name string) string { return "/v2/sandboxes/" + url.PathEscape(name) }

func sessionPath(sid string) string { return conn.SessionPath(sid) }

func validateID(field, id string) error { return conn.ValidateID(field, id) }

func projectQuery(key, project string) url.Values {
	q := url.Values{}
	if project != "" {
		q.Set(key, project)
	}
	return q
}

// Get returns a handle to the named sandbox. The handle may hold a stopped
// session; the first call that needs it resumes it (unless auto-resume is
// off). A missing sandbox gives an error matching ErrNotFound.
func (c *Client) Get(ctx context.Context, name string) (*Sandbox, error) {
	ctx, op := c.start(ctx, observe.OpGet, slog.String(observe.KeySandbox, name))
	out, err := c.get(ctx, name, false)
	if err != nil {
		op.End(err)
		return nil, err
	}
	sb := c.newSandbox(out)
	endSandbox(op, sb, nil)
	return sb, nil
}

// Resume returns a handle to the named sandbox with a running session: it
// boots a new session when the current one is not running, in the same
// request as Get. A missing sandbox gives an error matching ErrNotFound.
func (c *Client) Resume(ctx context.Context, name string) (*Sandbox, error) {
	ctx, op := c.start(ctx, observe.OpResume, slog.String(observe.KeySandbox, name))
	out, err := c.get(ctx, name, true)
	if err != nil {
		op.End(err)
		return nil, err
	}
	op.Set(slog.Bool(observe.KeyResumed, out.Resumed))
	sb := c.newSandbox(out)
	endSandbox(op, sb, nil)
	return sb, nil
}

func (c *Client) get(ctx context.Context, name string, resume bool) (*wire.SandboxResponse, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	project, err := c.project(ctx)
	if err != nil {
		return nil, err
	}
	q := projectQuery("projectId", project)
	if resume {
		q.Set("resume", "true")
	}
	var out wire.SandboxResponse
	err = c.core.JSON(ctx, &httpcore.Call{Method: "GET", Path: sandboxPath(name), Query: q,
		Op: "get sandbox", SandboxName: name}, &out)
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// GetOrCreate returns the sandbox named p.Name with a running session:
// it resumes the sandbox when its session stopped (see Resume), creates it
// when it does not exist, and when it cannot be resumed because its
// snapshot is gone (snapshot_not_found: 400 from hosted Vercel for a
// non-persistent sandbox, 410 in the API reference) deletes it and creates
// it again. When a concurrent caller creates the same name first, its
// sandbox is adopted. Without a name it always creates.
func (c *Client) GetOrCreate(ctx context.Context, p CreateParams) (*Sandbox, error) {
	if p.Name == "" {
		return c.Create(ctx, p)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sb, err := c.Resume(ctx, p.Name)
	if err == nil {
		return sb, nil
	}
	switch {
	case errors.Is(err, ErrNotFound):
	case errors.Is(err, ErrSnapshotNotFound):
		if err := c.Delete(ctx, p.Name, DeleteParams{}); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	default:
		return nil, err
	}
	sb, err = c.Create(ctx, p)
	if err != nil && nameTaken(err) {
		// Another caller created it meanwhile: adopt the winner.
		return c.Resume(ctx, p.Name)
	}
	return sb, err
}

// nameTaken reports a create refused because its name is in use: 409, or
// the 400 "already exists" that hosted Vercel answers.
func nameTaken(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.StatusCode == 409 || (ae.StatusCode == 400 && strings.Contains(ae.Message, "already exists"))
}

// List iterates over the sandboxes of the project, following pagination.
// Breaking out of the loop stops fetching.
func (c *Client) List(ctx context.Context, p ListParams) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		if err := p.validate(); err != nil {
			yield(Info{}, err)
			return
		}
		project, err := c.project(ctx)
		if err != nil {
			yield(Info{}, err)
			return
		}
		q := projectQuery("project", project)
		if p.PageSize > 0 {
			q.Set("limit", strconv.Itoa(p.PageSize))
		}
		if p.SortBy != "" {
			q.Set("sortBy", p.SortBy)
		}
		if p.Ascending {
			q.Set("sortOrder", "asc")
		}
		if p.NamePrefix != "" {
			q.Set("namePrefix", p.NamePrefix)
		}
		if p.TagKey != "" {
			q.Set("tags", p.TagKey+":"+p.TagValue)
		}
		if p.Status != "" {
			q.Set("status", string(p.Status))
		}
		call := &httpcore.Call{Method: "GET", Path: "/v2/sandboxes", Query: q, Op: "list sandboxes"}
		for w, err := range pages(ctx, c, call, func(r *wire.ListSandboxesResponse) ([]wire.Sandbox, *string) { return r.Sandboxes, r.Pagination.Next }) {
			if err != nil {
				yield(Info{}, err)
				return
			}
			if !yield(infoFromWire(&w), nil) {
				return
			}
		}
	}
}

// Update changes a sandbox's configuration and returns it. Unlike
// Sandbox.Update it does not touch the running session.
func (c *Client) Update(ctx context.Context, name string, p UpdateParams) (Info, []Route, error) {
	if err := ValidateName(name); err != nil {
		return Info{}, nil, err
	}
	if err := p.Validate(); err != nil {
		return Info{}, nil, err
	}
	project, err := c.project(ctx)
	if err != nil {
		return Info{}, nil, err
	}
	var out wire.SandboxOnlyResponse
	// A PATCH sets values; sending it twice gives the same state.
	err = c.core.JSON(ctx, &httpcore.Call{Method: "PATCH", Path: sandboxPath(name), Query: projectQuery("projectId", project),
		JSON: p.toWire(), Op: "update sandbox", SandboxName: name}, &out)
	if err != nil {
		return Info{}, nil, err
	}
	var routes []Route
	if out.Routes != nil {
		routes = routesFromWire(out.Routes)
	}
	return infoFromWire(&out.Sandbox), routes, nil
}

// DeleteParams refine Delete. The zero value deletes the sandbox only.
type DeleteParams struct {
	// OrphanSnapshots also deletes the sandbox's snapshots that no other
	// sandbox uses.
	OrphanSnapshots bool
}

// Delete stops the named sandbox's session, if running, and deletes the
// sandbox.
func (c *Client) Delete(ctx context.Context, name string, p DeleteParams) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	project, err := c.project(ctx)
	if err != nil {
		return err
	}
	q := projectQuery("projectId", project)
	if p.OrphanSnapshots {
		q.Set("deleteOrphanSnapshots", "true")
	}
	return c.core.JSON(ctx, &httpcore.Call{Method: "DELETE", Path: sandboxPath(name), Query: q,
		Op: "delete sandbox", SandboxName: name}, nil)
}

// Fork creates a new sandbox from the configuration and current snapshot
// of the sandbox called name. Like Create, it is not safe to repeat.
func (c *Client) Fork(ctx context.Context, name string, p ForkParams) (*Sandbox, error) {
	ctx, op := c.start(ctx, observe.OpFork, slog.String(observe.KeySandbox, name))
	sb, err := c.fork(ctx, name, p)
	endSandbox(op, sb, err)
	return sb, err
}

func (c *Client) fork(ctx context.Context, name string, p ForkParams) (*Sandbox, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	project, err := c.project(ctx)
	if err != nil {
		return nil, err
	}
	var out wire.SandboxResponse
	err = c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sandboxPath(name) + "/fork",
		Query: projectQuery("projectId", project), JSON: p.toWire(), Safety: httpcore.Unsafe,
		Op: "fork sandbox", SandboxName: name}, &out)
	if err != nil {
		return nil, err
	}
	return c.newSandbox(&out), nil
}

// GetSession fetches one session by id, with its routes.
func (c *Client) GetSession(ctx context.Context, sessionID string) (Session, []Route, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Session{}, nil, err
	}
	var out wire.SessionResponse
	err := c.core.JSON(ctx, &httpcore.Call{Method: "GET", Path: sessionPath(sessionID), Op: "get session", SessionID: sessionID}, &out)
	if err != nil {
		return Session{}, nil, err
	}
	return sessionFromWire(&out.Session), routesFromWire(out.Routes), nil
}

// ListSessions iterates over sessions, newest first unless p.Ascending.
func (c *Client) ListSessions(ctx context.Context, p PageParams) iter.Seq2[Session, error] {
	return func(yield func(Session, error) bool) {
		for w, err := range listPages(ctx, c, p, "/v2/sandboxes/sessions", "list sessions",
			func(r *wire.ListSessionsResponse) ([]wire.Session, *string) { return r.Sessions, r.Pagination.Next }) {
			if err != nil {
				yield(Session{}, err)
				return
			}
			if !yield(sessionFromWire(&w), nil) {
				return
			}
		}
	}
}

// ListSnapshots iterates over snapshots, newest first unless p.Ascending.
func (c *Client) ListSnapshots(ctx context.Context, p PageParams) iter.Seq2[Snapshot, error] {
	return func(yield func(Snapshot, error) bool) {
		for w, err := range listPages(ctx, c, p, "/v2/sandboxes/snapshots", "list snapshots",
			func(r *wire.ListSnapshotsResponse) ([]wire.Snapshot, *string) { return r.Snapshots, r.Pagination.Next }) {
			if err != nil {
				yield(Snapshot{}, err)
				return
			}
			if !yield(snapshotFromWire(&w), nil) {
				return
			}
		}
	}
}

func listPages[R any, T any](ctx context.Context, c *Client, p PageParams, path, op string, items func(*R) ([]T, *string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		if err := p.validate(); err != nil {
			yield(zero, err)
			return
		}
		project, err := c.project(ctx)
		if err != nil {
			yield(zero, err)
			return
		}
		q := projectQuery("project", project)
		if p.SandboxName != "" {
			q.Set("name", p.SandboxName)
		}
		if p.PageSize > 0 {
			q.Set("limit", strconv.Itoa(p.PageSize))
		}
		if p.Ascending {
			q.Set("sortOrder", "asc")
		}
		pages(ctx, c, &httpcore.Call{Method: "GET", Path: path, Query: q, Op: op, SandboxName: p.SandboxName}, items)(yield)
	}
}

// pages sends call once per page, following pagination.next as the cursor
// query parameter, and yields the items of each page. A cursor the server
// sent before ends the listing with a *RepeatedCursorError instead of
// another request: following it would loop for as long as the server likes.
func pages[R any, T any](ctx context.Context, c *Client, call *httpcore.Call, items func(*R) ([]T, *string)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := map[string]bool{}
		for n := 1; ; n++ {
			var page R
			if err := c.core.JSON(ctx, call, &page); err != nil {
				yield(zero, err)
				return
			}
			list, next := items(&page)
			for _, it := range list {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil || *next == "" {
				return
			}
			if seen[*next] {
				yield(zero, &RepeatedCursorError{Op: call.Op, Cursor: *next, Pages: n})
				return
			}
			seen[*next] = true
			call.Query.Set("cursor", *next)
		}
	}
}

// StopSession stops a session by id and waits until it has stopped (and,
// for a persistent sandbox, been snapshotted). A session that had already
// stopped is not an error: the result has AlreadyStopped set. This works
// from any process that knows the session id. Stop stops a sandbox known
// by name.
func (c *Client) StopSession(ctx context.Context, sessionID string) (*StopResult, error) {
	ctx, op := c.start(ctx, observe.OpStop, slog.String(observe.KeySession, sessionID))
	res, err := c.stopSession(ctx, sessionID, "")
	endStop(op, res, err)
	return res, err
}

func (c *Client) stopSession(ctx context.Context, sessionID, name string) (*StopResult, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return nil, err
	}
	var out wire.StopResponse
	var date string
	sent := time.Now()
	err := c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sessionID) + "/stop",
		Op: "stop session", SandboxName: name, SessionID: sessionID, Stream: true,
		Answered: func(h http.Header) { date = h.Get("Date") }}, &out)
	if errors.Is(err, ErrGone) {
		res := &StopResult{AlreadyStopped: true}
		if s, _, gerr := c.GetSession(ctx, sessionID); gerr == nil {
			res.Session = s
		} else {
			res.Session = Session{ID: sessionID, Status: StatusStopped}
		}
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	res := &StopResult{Session: sessionFromWire(&out.Session),
		AlreadyStopped: stoppedBefore(&out.Session, date, time.Since(sent))}
	if out.Sandbox != nil {
		in := infoFromWire(out.Sandbox)
		res.Sandbox = &in
	}
	if out.Snapshot != nil {
		s := snapshotFromWire(out.Snapshot)
		res.Snapshot = &s
	}
	return res, nil
}

// stoppedBefore reports whether a stop answered 200 found its session
// already stopped, as the API answers a repeated stop: the session is
// stopped and its stop was requested before this call reached the server.
// The server's clock says when that was: the answer's Date (whole seconds)
// less the time the call took is never later than its arrival, so a stop
// this call made is never reported as an earlier one.
func stoppedBefore(s *wire.Session, date string, took time.Duration) bool {
	requested := s.RequestedStopAt
	if requested == nil {
		requested = s.StoppedAt
	}
	if !Status(s.Status).Terminal() || requested == nil {
		return false
	}
	answered, err := http.ParseTime(date)
	if err != nil {
		return false
	}
	return wire.Time(*requested).Before(answered.Add(-took))
}

// Stop stops the named sandbox's current session, if it runs. It
// needs only the name (for example one stored in a database). A sandbox
// that was already stopped gives AlreadyStopped; a missing one gives an
// error matching ErrNotFound.
func (c *Client) Stop(ctx context.Context, name string) (*StopResult, error) {
	ctx, op := c.start(ctx, observe.OpStop, slog.String(observe.KeySandbox, name))
	res, err := c.stop(ctx, name)
	endStop(op, res, err)
	return res, err
}

func (c *Client) stop(ctx context.Context, name string) (*StopResult, error) {
	out, err := c.get(ctx, name, false)
	if err != nil {
		return nil, err
	}
	if Status(out.Session.Status).Terminal() {
		in := infoFromWire(&out.Sandbox)
		return &StopResult{Session: sessionFromWire(&out.Session), Sandbox: &in, AlreadyStopped: true}, nil
	}
	return c.stopSession(ctx, out.Session.ID, name)
}

// ExtendSessionTimeout adds d to a running session's timeout and returns the
// session. It is not retried after an ambiguous failure (it would extend
// twice).
func (c *Client) ExtendSessionTimeout(ctx context.Context, sessionID string, d time.Duration) (Session, error) {
	return c.extend(ctx, sessionID, "", d)
}

func (c *Client) extend(ctx context.Context, sessionID, name string, d time.Duration) (Session, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Session{}, err
	}
	if d <= 0 {
		return Session{}, apierr.Invalid("duration", "must be positive, got %s", d)
	}
	var out wire.SessionResponse
	err := c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sessionID) + "/extend-timeout",
		JSON: wire.ExtendRequest{Duration: wire.Millis(d)}, Safety: httpcore.Unsafe, Op: "extend timeout",
		SandboxName: name, SessionID: sessionID}, &out)
	if err != nil {
		return Session{}, err
	}
	return sessionFromWire(&out.Session), nil
}

// SetSessionNetworkPolicy changes the network policy of a running
// session and returns the session.
func (c *Client) SetSessionNetworkPolicy(ctx context.Context, sessionID string, p *NetworkPolicy) (Session, error) {
	return c.setPolicy(ctx, sessionID, "", p)
}

func (c *Client) setPolicy(ctx context.Context, sessionID, name string, p *NetworkPolicy) (Session, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Session{}, err
	}
	if p == nil {
		return Session{}, apierr.Invalid("NetworkPolicy", "nil")
	}
	if err := p.Validate(); err != nil {
		return Session{}, err
	}
	var out wire.SessionResponse
	err := c.core.JSON(ctx, &httpcore.Call{Method: "POST", Path: sessionPath(sessionID) + "/network-policy",
		JSON: p.toWire(), Op: "update network policy", SandboxName: name, SessionID: sessionID}, &out)
	if err != nil {
		return Session{}, err
	}
	return sessionFromWire(&out.Session), nil
}

// SnapshotSession snapshots a running session. The session stops once the
// snapshot is taken. Not safe to repeat after an ambiguous failure.
func (c *Client) SnapshotSession(ctx context.Context, sessionID string, p SnapshotParams) (Snapshot, error) {
	ctx, op := c.start(ctx, observe.OpSnapshot, slog.String(observe.KeySession, sessionID))
	s, _, err := c.snapshot(ctx, sessionID, "", p)
	op.End(err)
	return s, err
}

func (c *Client) snapshot(ctx context.Context, sessionID, name string, p SnapshotParams) (Snapshot, *Session, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Snapshot{}, nil, err
	}
	call := &httpcore.Call{Method: "POST", Path: sessionPath(sessionID) + "/snapshot", Safety: httpcore.Unsafe,
		Op: "create snapshot", SandboxName: name, SessionID: sessionID, Stream: true}
	if p.Expiration != nil {
		if err := validateSnapshotExpiration("Expiration", *p.Expiration); err != nil {
			return Snapshot{}, nil, err
		}
		call.JSON = wire.SnapshotRequest{Expiration: ptr(wire.Millis(*p.Expiration))}
	}
	var out wire.SnapshotResponse
	if err := c.core.JSON(ctx, call, &out); err != nil {
		return Snapshot{}, nil, err
	}
	var sess *Session
	if out.Session != nil {
		s := sessionFromWire(out.Session)
		sess = &s
	}
	return snapshotFromWire(&out.Snapshot), sess, nil
}

// GetSnapshot fetches a snapshot by id.
func (c *Client) GetSnapshot(ctx context.Context, snapshotID string) (Snapshot, error) {
	if err := validateID("snapshotID", snapshotID); err != nil {
		return Snapshot{}, err
	}
	var out wire.SnapshotResponse
	if err := c.core.JSON(ctx, &httpcore.Call{Method: "GET", Path: "/v2/sandboxes/snapshots/" + snapshotID, Op: "get snapshot"}, &out); err != nil {
		return Snapshot{}, err
	}
	return snapshotFromWire(&out.Snapshot), nil
}

// DeleteSnapshot deletes a snapshot and returns its final state.
func (c *Client) DeleteSnapshot(ctx context.Context, snapshotID string) (Snapshot, error) {
	if err := validateID("snapshotID", snapshotID); err != nil {
		return Snapshot{}, err
	}
	var out wire.SnapshotResponse
	if err := c.core.JSON(ctx, &httpcore.Call{Method: "DELETE", Path: "/v2/sandboxes/snapshots/" + snapshotID, Op: "delete snapshot"}, &out); err != nil {
		return Snapshot{}, err
	}
	return snapshotFromWire(&out.Snapshot), nil
}
