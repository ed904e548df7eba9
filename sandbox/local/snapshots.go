package local

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// captureSnapshot copies the filesystem of sess's sandbox into a new
// snapshot and makes it the sandbox's current snapshot. A copy that fails
// yields a snapshot with status failed.
func (s *Server) captureSnapshot(sess *sessionRec, method string, expiration *int64) *snapshotRec {
	sb := sess.sb
	s.mu.Lock()
	id := s.ids.snapshotID()
	for s.snapshots[id] != nil {
		id = s.ids.snapshotID()
	}
	ttl := defaultSnapTTLms
	switch {
	case expiration != nil:
		ttl = *expiration
	case sb.snapshotExpiration != nil:
		ttl = *sb.snapshotExpiration
	}
	parent := sb.currentSnapshotID
	snap := &snapshotRec{
		seq:             s.nextSeq(),
		id:              id,
		sb:              sb,
		sandboxName:     sb.name,
		sourceSessionID: sess.id,
		region:          sess.region,
		dir:             filepath.Join(s.root, "snapshots", id),
		creationMethod:  method,
		parentID:        parent,
	}
	s.mu.Unlock()

	size, err := copyTree(snap.dir, sb.dir)
	if err != nil {
		s.log.Warn("local: snapshot copy failed", "snapshot", id, "err", err)
		_ = os.RemoveAll(snap.dir)
	}

	s.mu.Lock()
	now := s.nowMs()
	snap.status = snapCreated
	snap.sizeBytes = size
	snap.createdAt, snap.updatedAt = now, now
	if ttl > 0 {
		snap.expiresAt = ptr(now + ttl)
	}
	s.snapshots[id] = snap
	s.snapList = append(s.snapList, snap)
	var evicted []string
	if err != nil {
		snap.status = snapFailed
	} else {
		sb.currentSnapshotID = id
		sb.syncedSnapshot = id
		sb.updatedAt = now
		evicted = s.evictSnapshots(sb)
	}
	s.mu.Unlock()
	s.removeDirs(evicted)
	return snap
}

// evictSnapshots applies keepLastSnapshots to sb and returns the
// directories of the snapshots it deleted. Called with s.mu held.
func (s *Server) evictSnapshots(sb *sandboxRec) []string {
	k := sb.keepLast
	if k == nil || (k.DeleteEvicted != nil && !*k.DeleteEvicted) {
		return nil
	}
	var dirs []string
	kept := 0
	for _, snap := range slices.Backward(s.snapList) {
		if snap.sb != sb || snap.status != snapCreated {
			continue
		}
		if kept < k.Count || snap.id == sb.currentSnapshotID {
			kept++
			continue
		}
		dirs = append(dirs, s.markSnapshotDeleted(snap))
	}
	return dirs
}

// markSnapshotDeleted turns snap into a tombstone and returns its directory
// for the caller to remove. Called with s.mu held.
func (s *Server) markSnapshotDeleted(snap *snapshotRec) string {
	snap.status = snapDeleted
	snap.updatedAt = s.nowMs()
	return snap.dir
}

// handleSnapshot serves POST /v2/sandboxes/sessions/{sid}/snapshot.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		return aerr
	}
	var body wire.SnapshotRequest
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	if e := body.Expiration; e != nil && *e != 0 && *e < wire.MinSnapshotExpiration.Milliseconds() {
		// Hosted Vercel's answer, recorded (arugula-salad/wisp,
		// docs/providers/vercel.md).
		return badRequest("`expiration` must be 0 (no expiration) or >= %d ms (1 day).", wire.MinSnapshotExpiration.Milliseconds())
	}
	sess.sb.lc.Lock()
	s.mu.Lock()
	aerr = statusError(sess.status)
	s.mu.Unlock()
	if aerr != nil {
		sess.sb.lc.Unlock()
		return aerr
	}
	params := &snapshotParams{expiration: body.Expiration}
	var reply wire.SnapshotResponse
	if s.cfg.earlyStops && s.hosted() {
		reply = s.snapshotEarly(sess, params)
	} else {
		snap, aerr := s.stopLocked(sess, stopRequested, params)
		sess.sb.lc.Unlock()
		if aerr != nil {
			return aerr
		}
		reply = s.snapshotReply(sess, snap)
	}
	status := http.StatusOK
	if s.hosted() {
		status = http.StatusCreated // as hosted Vercel answers
	}
	writeJSON(w, status, reply)
	return nil
}

// snapshotReply is the answer to a snapshot: the snapshot and its session.
func (s *Server) snapshotReply(sess *sessionRec, snap *snapshotRec) wire.SnapshotResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	sessW := sessionWire(sess)
	return wire.SnapshotResponse{Snapshot: snapshotWire(snap), Session: &sessW}
}

// lookupSnapshot finds a snapshot; a deleted one stays readable, with
// status deleted, as on the API.
func (s *Server) lookupSnapshot(id string) (*snapshotRec, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := s.snapshots[id]
	if snap == nil {
		return nil, notFound("Snapshot %s was not found.", id)
	}
	return snap, nil
}

// handleGetSnapshot serves GET /v2/sandboxes/snapshots/{id}.
func (s *Server) handleGetSnapshot(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	snap, aerr := s.lookupSnapshot(id)
	if aerr != nil {
		return aerr
	}
	return s.writeLocked(w, func() any { return wire.SnapshotResponse{Snapshot: snapshotWire(snap)} })
}

// handleDeleteSnapshot serves DELETE /v2/sandboxes/snapshots/{id}.
func (s *Server) handleDeleteSnapshot(w http.ResponseWriter, r *http.Request) *apiError {
	id := r.PathValue("id")
	snap, aerr := s.lookupSnapshot(id)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	if snap.status == snapDeleted {
		s.mu.Unlock()
		return notFound("Snapshot %s was not found.", id)
	}
	dir := s.markSnapshotDeleted(snap)
	reply := wire.SnapshotResponse{Snapshot: snapshotWire(snap)}
	s.mu.Unlock()
	s.removeDirs([]string{dir})
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// handleListSnapshots serves GET /v2/sandboxes/snapshots. Deleted snapshots
// stay listed, with status deleted.
func (s *Server) handleListSnapshots(w http.ResponseWriter, r *http.Request) *apiError {
	out, pag, aerr := listPage(s, r, func() []*snapshotRec { return s.snapList },
		func(snap *snapshotRec, lq listQuery) bool {
			return lq.name == "" || snap.sandboxName == lq.name
		},
		func(snap *snapshotRec) creationItem[wire.Snapshot] {
			return creationItem[wire.Snapshot]{snap.seq, snap.createdAt, snapshotWire(snap)}
		})
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, wire.ListSnapshotsResponse{Snapshots: out, Pagination: pag})
	return nil
}

// handleSnapshotTree serves GET /v2/sandboxes/snapshots/tree. With
// sortOrder desc (the default) it walks from the anchor's parent towards
// the root; with asc it walks down through the oldest child at each step,
// listing the other children as siblings. pagination.next is the id of the
// last node returned when the walk can go on: pass it as the next
// snapshotId.
func (s *Server) handleSnapshotTree(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	if aerr := s.checkProjectQuery(q.Get("project")); aerr != nil {
		return aerr
	}
	anchorID := q.Get("snapshotId")
	if anchorID == "" {
		return badRequest("snapshotId is required.")
	}
	limit, desc, aerr := parsePaging(q)
	if aerr != nil {
		return aerr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	anchor := s.snapshots[anchorID]
	if anchor == nil {
		return notFound("Snapshot %s was not found.", anchorID)
	}
	children := map[string][]*snapshotRec{}
	for _, snap := range s.snapList {
		if snap.parentID != "" {
			children[snap.parentID] = append(children[snap.parentID], snap)
		}
	}
	node := func(snap *snapshotRec, siblings []*snapshotRec) wire.SnapshotTreeNode {
		n := wire.SnapshotTreeNode{Snapshot: snapshotWire(snap), Siblings: []wire.Snapshot{}, Count: strconv.Itoa(len(children[snap.id]))}
		for _, sib := range siblings {
			if sib != snap {
				n.Siblings = append(n.Siblings, snapshotWire(sib))
			}
		}
		return n
	}
	parentOf := func(snap *snapshotRec) []*snapshotRec {
		if snap.parentID == "" {
			return nil
		}
		return children[snap.parentID]
	}
	a := node(anchor, parentOf(anchor))
	reply := wire.SnapshotTreeResponse{Snapshots: []wire.SnapshotTreeNode{}, Anchor: &a}
	cur := anchor
	for len(reply.Snapshots) < limit {
		var next *snapshotRec
		var sibs []*snapshotRec
		if desc {
			next = s.snapshots[cur.parentID]
			if next != nil {
				sibs = parentOf(next)
			}
		} else if kids := children[cur.id]; len(kids) > 0 {
			next, sibs = kids[0], kids
		}
		if next == nil {
			break
		}
		reply.Snapshots = append(reply.Snapshots, node(next, sibs))
		cur = next
	}
	more := false
	if desc {
		more = cur.parentID != "" && s.snapshots[cur.parentID] != nil
	} else {
		more = len(children[cur.id]) > 0
	}
	if more && cur != anchor {
		reply.Pagination.Next = ptr(cur.id)
	}
	reply.Pagination.Count = len(reply.Snapshots)
	writeJSON(w, http.StatusOK, reply)
	return nil
}
