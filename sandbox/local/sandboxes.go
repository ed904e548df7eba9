package local

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// sandboxReply answers create, get and fork. Unlike wire.SandboxResponse it
// always carries resumed, as the real API does.
type sandboxReply struct {
	Sandbox wire.Sandbox `json:"sandbox"`
	Session wire.Session `json:"session"`
	Routes  []wire.Route `json:"routes"`
	Resumed bool         `json:"resumed"`
}

// replyLocked builds the create/get/fork answer. Called with s.mu held.
func (s *Server) replyLocked(sb *sandboxRec, sess *sessionRec, resumed bool) sandboxReply {
	return sandboxReply{
		Sandbox: s.sandboxWire(sb),
		Session: sessionWire(sess),
		Routes:  sb.routes(),
		Resumed: resumed,
	}
}

// lookupSandbox returns the live sandbox called name.
func (s *Server) lookupSandbox(name string) (*sandboxRec, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[name]
	if sb == nil {
		return nil, notFound("Sandbox %s was not found.", name)
	}
	return sb, nil
}

// requestedSandbox returns the live sandbox that the path of r names,
// after checking the projectId query parameter.
func (s *Server) requestedSandbox(r *http.Request) (*sandboxRec, *apiError) {
	if aerr := s.checkProjectQuery(r.URL.Query().Get("projectId")); aerr != nil {
		return nil, aerr
	}
	return s.lookupSandbox(r.PathValue("name"))
}

// handleGetSandbox serves GET /v2/sandboxes/{name}[?resume=true].
func (s *Server) handleGetSandbox(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	sb, aerr := s.requestedSandbox(r)
	if aerr != nil {
		return aerr
	}
	if q.Get("resume") == "true" {
		reply, aerr := s.resume(sb)
		if aerr != nil {
			return aerr
		}
		writeJSON(w, http.StatusOK, reply)
		return nil
	}
	s.mu.Lock()
	reply := s.replyLocked(sb, sb.current, false)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// checkProjectQuery checks an optional project query parameter.
func (s *Server) checkProjectQuery(project string) *apiError {
	if project == "" && s.cfg.project == "" {
		return nil
	}
	return s.checkProject(project)
}

// sandboxItem is one sandbox of a list, with its sort keys.
type sandboxItem struct {
	seq  int64
	name string
	key  int64
	snap string
	w    wire.Sandbox
}

// handleListSandboxes serves GET /v2/sandboxes.
func (s *Server) handleListSandboxes(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	if aerr := s.checkProjectQuery(q.Get("project")); aerr != nil {
		return aerr
	}
	limit, aerr := parseLimit(q.Get("limit"))
	if aerr != nil {
		return aerr
	}
	sortBy := cmp.Or(q.Get("sortBy"), "createdAt")
	switch sortBy {
	case "createdAt", "name", "statusUpdatedAt", "currentSnapshotId":
	default:
		return badRequest("Invalid sortBy %q.", sortBy)
	}
	desc, aerr := parseSortOrder(q.Get("sortOrder"))
	if aerr != nil {
		return aerr
	}
	status := q.Get("status")
	switch status {
	case "", statusRunning, statusStopping, statusStopped:
	default:
		return badRequest("Invalid status filter %q.", status)
	}
	type tagFilter struct{ k, v string }
	var tags []tagFilter
	for _, t := range q["tags"] {
		k, v, ok := strings.Cut(t, ":")
		if !ok || k == "" {
			return badRequest("Invalid tags filter %q: use key:value.", t)
		}
		tags = append(tags, tagFilter{k, v})
	}
	prefix := q.Get("namePrefix")
	if prefix != "" && sortBy != "name" {
		// Hosted Vercel's answer, recorded (arugula-salad/wisp,
		// docs/providers/vercel.md).
		return badRequest("Invalid request: `namePrefix` is only valid when `sortBy` is `name`.")
	}

	var items []sandboxItem
	s.mu.Lock()
	for _, sb := range s.sandboxes {
		if prefix != "" && !strings.HasPrefix(sb.name, prefix) {
			continue
		}
		if status != "" && sb.current.status != status {
			continue
		}
		match := true
		for _, t := range tags {
			if v, ok := sb.tags[t.k]; !ok || v != t.v {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		key := sb.createdAt
		if sortBy == "statusUpdatedAt" {
			key = sb.statusUpdatedAt
		}
		items = append(items, sandboxItem{seq: sb.seq, name: sb.name, key: key, snap: sb.currentSnapshotID, w: s.sandboxWire(sb)})
	}
	s.mu.Unlock()

	slices.SortFunc(items, func(a, b sandboxItem) int {
		var c int
		switch sortBy {
		case "name":
			c = strings.Compare(a.name, b.name)
		case "currentSnapshotId":
			c = strings.Compare(a.snap, b.snap)
		default:
			c = cmp.Compare(a.key, b.key)
		}
		if c == 0 {
			c = cmp.Compare(a.seq, b.seq)
		}
		if desc {
			c = -c
		}
		return c
	})
	page, pag, aerr := paginate(items, limit, q.Get("cursor"))
	if aerr != nil {
		return aerr
	}
	out := make([]wire.Sandbox, len(page))
	for i, it := range page {
		out[i] = it.w
	}
	writeJSON(w, http.StatusOK, wire.ListSandboxesResponse{Sandboxes: out, Pagination: pag})
	return nil
}

// handleDeleteSandbox serves DELETE /v2/sandboxes/{name}.
func (s *Server) handleDeleteSandbox(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	sb, aerr := s.requestedSandbox(r)
	if aerr != nil {
		return aerr
	}
	sb.lc.Lock()
	defer sb.lc.Unlock()
	s.mu.Lock()
	if sb.deleted {
		s.mu.Unlock()
		return notFound("Sandbox %s was not found.", sb.name)
	}
	cur := sb.current
	s.mu.Unlock()
	s.stopLocked(cur, stopForDelete, nil)

	var orphanDirs []string
	s.mu.Lock()
	sb.deleted = true
	delete(s.sandboxes, sb.name)
	sb.updatedAt = s.nowMs()
	if q.Get("deleteOrphanSnapshots") == "true" {
		used := map[string]bool{}
		for _, other := range s.sandboxes {
			used[other.currentSnapshotID] = true
		}
		for _, snap := range s.snapList {
			if snap.sb == sb && snap.status == snapCreated && !used[snap.id] {
				orphanDirs = append(orphanDirs, s.markSnapshotDeleted(snap))
			}
		}
	}
	reply := updateReply{Sandbox: s.sandboxWire(sb)}
	s.mu.Unlock()

	s.removeDirs(orphanDirs)
	if err := s.removeSandboxDir(sb.dir); err != nil {
		s.log.Warn("local: cannot remove directory", "err", err)
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// parseLimit parses a list limit: 1–50, default 20.
func parseLimit(v string) (int, *apiError) {
	if v == "" {
		return 20, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || itoa64(int64(n)) != v || n < 1 || n > 50 {
		return 0, badRequest("Invalid limit %q: it must be an integer between 1 and 50.", v)
	}
	return n, nil
}

// parseSortOrder parses asc|desc (default desc) and reports whether desc.
func parseSortOrder(v string) (bool, *apiError) {
	switch v {
	case "", "desc":
		return true, nil
	case "asc":
		return false, nil
	}
	return false, badRequest("Invalid sortOrder %q: use asc or desc.", v)
}
