package local

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// stopKind says why a session stops.
type stopKind int

const (
	stopRequested stopKind = iota // stop endpoint or Server.Stop: snapshot when persistent
	stopExpired                   // timeout: same as a requested stop
	stopForDelete                 // sandbox deletion: no snapshot
)

// snapshotParams asks a stop to take a snapshot (the snapshot endpoint).
type snapshotParams struct {
	expiration *int64
}

// sessionReply answers GET session; routes are always present.
type sessionReply struct {
	Session wire.Session `json:"session"`
	Routes  []wire.Route `json:"routes"`
}

// startSession boots a new session of sb. Called with s.mu held; the
// session's working directory must exist.
func (s *Server) startSession(sb *sandboxRec, sourceSnap string) *sessionRec {
	now := s.nowMs()
	id := s.ids.sessionID()
	for s.sessions[id] != nil {
		id = s.ids.sessionID()
	}
	ctx, cancel := context.WithCancel(s.baseCtx)
	sess := &sessionRec{
		seq:              s.nextSeq(),
		id:               id,
		sb:               sb,
		projectID:        sb.projectID,
		cwd:              s.sessionCwd(sb),
		memory:           sb.vcpus * memoryPerVCPU,
		vcpus:            sb.vcpus,
		region:           sb.region,
		runtime:          sb.runtime,
		timeout:          sb.timeout,
		status:           statusRunning,
		requestedAt:      now,
		createdAt:        now,
		updatedAt:        now,
		startedAt:        now,
		sourceSnapshotID: sourceSnap,
		policy:           sb.policy,
		ctx:              ctx,
		cancel:           cancel,
		commands:         map[string]*commandRec{},
	}
	s.sessions[id] = sess
	s.sessList = append(s.sessList, sess)
	sb.current = sess
	sb.statusUpdatedAt, sb.updatedAt = now, now
	s.armExpiry(sess)
	return sess
}

// armExpiry (re)starts the expiry timer of sess when the server uses the
// real clock. Called with s.mu held.
func (s *Server) armExpiry(sess *sessionRec) {
	if !s.realClock || s.closed {
		return
	}
	d := time.Until(time.UnixMilli(sess.startedAt + sess.timeout))
	if sess.timer == nil {
		sess.timer = time.AfterFunc(d, func() { s.onExpiryTimer(sess) })
		return
	}
	sess.timer.Reset(d)
}

func (s *Server) onExpiryTimer(sess *sessionRec) {
	s.mu.Lock()
	if s.closed || sess.status != statusRunning {
		s.mu.Unlock()
		return
	}
	if s.nowMs() < sess.startedAt+sess.timeout {
		s.armExpiry(sess) // extended meanwhile, or the timer fired early
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	_, _ = s.stopSession(sess, stopExpired, nil)
}

// expireDue stops every running session whose timeout has passed and
// deletes expired snapshots. It runs before every request and inspection,
// which is what makes an injected clock work.
func (s *Server) expireDue() {
	now := s.nowMs()
	var due []*sessionRec
	var dirs []string
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	for _, sess := range s.sessList {
		if sess.status == statusRunning && now >= sess.startedAt+sess.timeout {
			due = append(due, sess)
		}
	}
	for _, snap := range s.snapList {
		if snap.status == snapCreated && snap.expiresAt != nil && now >= *snap.expiresAt {
			dirs = append(dirs, s.markSnapshotDeleted(snap))
		}
	}
	s.mu.Unlock()
	s.removeDirs(dirs)
	for _, sess := range due {
		_, _ = s.stopSession(sess, stopExpired, nil)
	}
}

func (s *Server) removeDirs(dirs []string) {
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			s.log.Warn("local: cannot remove directory", "err", err)
		}
	}
}

// stopSession stops sess (see stopLocked) under its sandbox's lifecycle lock.
func (s *Server) stopSession(sess *sessionRec, kind stopKind, params *snapshotParams) (*snapshotRec, *apiError) {
	sess.sb.lc.Lock()
	defer sess.sb.lc.Unlock()
	return s.stopLocked(sess, kind, params)
}

// stopLocked stops a running session: it reports stopping (or
// snapshotting) for the configured delay, kills every process, waits for
// commands and file operations to end, takes a snapshot when asked or when
// the sandbox is persistent, and marks the session stopped. A session that
// is not running is left as it is. The caller holds sess.sb.lc.
func (s *Server) stopLocked(sess *sessionRec, kind stopKind, params *snapshotParams) (*snapshotRec, *apiError) {
	takeSnap, ok := s.beginStop(sess, kind, params)
	if !ok {
		return nil, nil
	}
	snap := s.quiesce(sess, takeSnap, params)
	s.mu.Lock()
	s.markStopped(sess, s.nowMs())
	s.mu.Unlock()
	return snap, nil
}

// beginStop marks a running session stopping (or snapshotting) and reports
// whether a snapshot is to be taken; ok is false when the session was not
// running. The caller holds sess.sb.lc.
func (s *Server) beginStop(sess *sessionRec, kind stopKind, params *snapshotParams) (takeSnap, ok bool) {
	sb := sess.sb
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess.status != statusRunning {
		return false, false
	}
	now := s.nowMs()
	sess.status = statusStopping
	if params != nil {
		sess.status = statusSnapshotting
		sess.snapshottedAt = ptr(now)
	}
	sess.requestedStopAt = ptr(now)
	sess.updatedAt = now
	if sb.current == sess {
		sb.statusUpdatedAt = now
	}
	if sess.timer != nil {
		sess.timer.Stop()
	}
	return params != nil || (sb.persistent && kind != stopForDelete), true
}

// quiesce waits the stop delay, kills every process of a stopping session,
// waits for its operations to end and takes its snapshot when asked.
func (s *Server) quiesce(sess *sessionRec, takeSnap bool, params *snapshotParams) *snapshotRec {
	s.sleep(s.cfg.stopDelay)
	s.killSession(sess)
	sess.ops.Wait()
	if !takeSnap {
		return nil
	}
	method := "automatic"
	var exp *int64
	if params != nil {
		method, exp = "manual", params.expiration
	}
	return s.captureSnapshot(sess, method, exp)
}

// sleep waits d, or less when the server closes.
func (s *Server) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.baseCtx.Done():
	}
}

// killSession ends the session's context and sends SIGKILL to every
// command that is still running.
func (s *Server) killSession(sess *sessionRec) {
	s.mu.Lock()
	for _, c := range sess.commands {
		if c.exitCode == nil {
			c.sessionEnded = true
		}
	}
	s.mu.Unlock()
	running := s.runningCommands(sess)
	sess.cancel()
	for _, r := range running {
		_ = r.proc.Signal(signalKill)
	}
}

// markStopped records the end of a session. Called with s.mu held.
func (s *Server) markStopped(sess *sessionRec, now int64) {
	if sess.status == statusStopped {
		return
	}
	d := max(now-sess.startedAt, 0)
	sess.status = statusStopped
	sess.stoppedAt = ptr(now)
	sess.duration = ptr(d)
	sess.activeCPU = ptr(int64(0))
	sess.transfer = &wire.NetworkTransfer{}
	sess.updatedAt = now
	if sess.timer != nil {
		sess.timer.Stop()
	}
	sb := sess.sb
	sb.totalDur += d
	if sb.current == sess {
		sb.statusUpdatedAt = now
	}
	sess.cancel()
	for _, c := range sess.commands {
		s.out.release(c.out)
	}
}

// resume answers GET …?resume=true: it waits for an in-flight stop, and
// boots a new session when the current one is not running.
func (s *Server) resume(sb *sandboxRec) (sandboxReply, *apiError) {
	sb.lc.Lock()
	defer sb.lc.Unlock()

	s.mu.Lock()
	if sb.deleted {
		s.mu.Unlock()
		return sandboxReply{}, notFound("Sandbox %s was not found.", sb.name)
	}
	if sb.current.status == statusRunning {
		reply := s.replyLocked(sb, sb.current, false)
		s.mu.Unlock()
		return reply, nil
	}
	if !sb.persistent && s.hosted() {
		// Hosted Vercel keeps nothing of a non-persistent sandbox.
		s.mu.Unlock()
		return sandboxReply{}, errorf(http.StatusBadRequest, codeSnapNotFound, "Sandbox %s is not persistent and cannot be resumed.", sb.name)
	}
	var restore *snapshotRec
	source := ""
	if id := sb.currentSnapshotID; id != "" {
		snap := s.snapshots[id]
		live := snap != nil && snap.status == snapCreated
		if !live && (sb.persistent || id != sb.syncedSnapshot) {
			s.mu.Unlock()
			return sandboxReply{}, errorf(http.StatusGone, codeSnapNotFound, "Snapshot %s needed to resume sandbox %s was not found.", id, sb.name)
		}
		if live {
			snap.lastUsedAt = ptr(s.nowMs())
			if id != sb.syncedSnapshot {
				restore = snap
			}
			if sb.persistent {
				source = id
			}
		}
	}
	s.mu.Unlock()

	if restore != nil {
		if err := replaceTree(sb.dir, restore.dir); err != nil {
			s.log.Warn("local: cannot restore snapshot", "snapshot", restore.id, "err", err)
		}
	}
	if err := s.makeCwd(sb); err != nil {
		s.log.Warn("local: cannot create working directory", "err", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if restore != nil {
		sb.syncedSnapshot = restore.id
	}
	sess := s.startSession(sb, source)
	return s.replyLocked(sb, sess, true), nil
}

// statusError is the answer to a session call that needs a running VM.
func statusError(status string) *apiError {
	switch status {
	case statusRunning:
		return nil
	case statusStopping:
		return errorf(http.StatusUnprocessableEntity, codeStopping, "Sandbox is stopping and is no longer available")
	case statusSnapshotting:
		return errorf(http.StatusUnprocessableEntity, codeSnapshotting, "Sandbox is creating a snapshot and will be stopped shortly")
	}
	return errorf(http.StatusGone, codeStopped, "Sandbox is stopped")
}

// lookupSession returns the session sid; with needVM it also requires the
// session to be running (410 / 422 otherwise).
func (s *Server) lookupSession(sid string, needVM bool) (*sessionRec, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sid]
	if sess == nil {
		return nil, notFound("Session %s was not found.", sid)
	}
	if needVM {
		if aerr := statusError(sess.status); aerr != nil {
			return nil, aerr
		}
	}
	return sess, nil
}

// handleGetSession serves GET /v2/sandboxes/sessions/{sid}.
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, false)
	if aerr != nil {
		return aerr
	}
	return s.writeLocked(w, func() any {
		return sessionReply{Session: sessionWire(sess), Routes: sess.sb.routes()}
	})
}

// handleListSessions serves GET /v2/sandboxes/sessions.
func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) *apiError {
	out, pag, aerr := listPage(s, r, func() []*sessionRec { return s.sessList },
		func(sess *sessionRec, lq listQuery) bool {
			return !sess.sb.deleted && (lq.name == "" || sess.sb.name == lq.name)
		},
		func(sess *sessionRec) creationItem[wire.Session] {
			return creationItem[wire.Session]{sess.seq, sess.createdAt, sessionWire(sess)}
		})
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, wire.ListSessionsResponse{Sessions: out, Pagination: pag})
	return nil
}

// handleStop serves POST /v2/sandboxes/sessions/{sid}/stop.
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, false)
	if aerr != nil {
		return aerr
	}
	if s.stopEarly(w, sess) {
		return nil
	}
	snap, aerr := s.stopSession(sess, stopRequested, nil)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, s.stopReply(sess, snap))
	return nil
}

func (s *Server) stopReply(sess *sessionRec, snap *snapshotRec) wire.StopResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	reply := wire.StopResponse{Session: sessionWire(sess)}
	if !sess.sb.deleted {
		sb := s.sandboxWire(sess.sb)
		reply.Sandbox = &sb
	}
	if snap != nil {
		sw := snapshotWire(snap)
		reply.Snapshot = &sw
	}
	return reply
}

// handleExtend serves POST /v2/sandboxes/sessions/{sid}/extend-timeout.
func (s *Server) handleExtend(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		return aerr
	}
	var body struct {
		Duration *int64 `json:"duration"`
	}
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	if body.Duration == nil || *body.Duration <= 0 {
		return badRequest("duration must be a positive number of milliseconds.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := statusError(sess.status); aerr != nil {
		return aerr
	}
	total := sess.timeout + *body.Duration
	if limit := s.cfg.maxTimeout.Milliseconds(); total > limit {
		return errorf(http.StatusBadRequest, codeTimeoutInvalid,
			"The sandbox timeout cannot exceed %d ms; extending by %d ms would make it %d ms.", limit, *body.Duration, total)
	}
	sess.timeout = total
	sess.updatedAt = s.nowMs()
	s.armExpiry(sess)
	writeJSON(w, http.StatusOK, wire.SessionResponse{Session: sessionWire(sess)})
	return nil
}

// handleNetworkPolicy serves POST /v2/sandboxes/sessions/{sid}/network-policy.
func (s *Server) handleNetworkPolicy(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		return aerr
	}
	data, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	pol, aerr := policyFromRequest(data)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := statusError(sess.status); aerr != nil {
		return aerr
	}
	now := s.nowMs()
	sess.policy = pol
	sess.updatedAt = now
	sess.sb.policy, sess.sb.policySet = pol, true
	sess.sb.updatedAt = now
	writeJSON(w, http.StatusOK, wire.SessionResponse{Session: sessionWire(sess)})
	return nil
}

// Stop stops a session as the stop endpoint does (taking an automatic
// snapshot when the sandbox is persistent), so that later session calls
// answer 410. Stopping a stopped session does nothing.
func (s *Server) Stop(sessionID string) error {
	if sessionID == "" {
		return apierr.Invalid("sessionID", "empty")
	}
	sess, aerr := s.lookupSession(sessionID, false)
	if aerr != nil {
		return fmt.Errorf("local: no session %q", sessionID)
	}
	_, _ = s.stopSession(sess, stopRequested, nil)
	return nil
}

// ExpireSession ends a session as if its timeout had passed.
func (s *Server) ExpireSession(sessionID string) error {
	if sessionID == "" {
		return apierr.Invalid("sessionID", "empty")
	}
	sess, aerr := s.lookupSession(sessionID, false)
	if aerr != nil {
		return fmt.Errorf("local: no session %q", sessionID)
	}
	_, _ = s.stopSession(sess, stopExpired, nil)
	return nil
}
