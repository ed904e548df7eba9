package local

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"unicode"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// defaultDriveSize is the maxSizeBytes of a drive made without one.
const defaultDriveSize = int64(10 << 30)

// driveRec is a drive. Drives are records only: mounting one stores and
// echoes the mount, and no data is kept. Guarded by Server.mu.
type driveRec struct {
	seq       int64
	id        string
	name      string
	projectID string
	region    string
	maxSize   int64
	createdAt int64
	updatedAt int64
}

// driveWire renders d, naming the running sandbox that mounts it
// read-write, if any. Called with s.mu held.
func (s *Server) driveWire(d *driveRec) wire.Drive {
	w := wire.Drive{ID: d.id, Name: d.name, ProjectID: d.projectID, Region: d.region, MaxSizeBytes: d.maxSize,
		CreatedAt: d.createdAt, UpdatedAt: d.updatedAt}
	if sb := s.driveUser(d.name); sb != nil {
		w.CurrentSandboxName, w.CurrentSessionID = sb.name, sb.current.id
	}
	return w
}

// driveUser returns the sandbox with a running session that mounts the
// drive read-write. Called with s.mu held.
func (s *Server) driveUser(name string) *sandboxRec {
	for _, sb := range s.sandboxes {
		if sb.deleted || sb.current == nil || sb.current.status != statusRunning {
			continue
		}
		for _, m := range sb.mounts {
			if m.Drive == name && (m.Mode == "" || m.Mode == "read-write") {
				return sb
			}
		}
	}
	return nil
}

func checkDriveName(name string) *apiError {
	if name == "" || len(name) > 255 || strings.IndexFunc(name, unicode.IsControl) >= 0 || strings.ContainsAny(name, "/\\") {
		return badRequest("Invalid drive name %q.", name)
	}
	return nil
}

// lookupDrive returns the named drive of the request's project.
func (s *Server) lookupDrive(r *http.Request) (*driveRec, *apiError) {
	if aerr := s.checkProjectQuery(r.URL.Query().Get("projectId")); aerr != nil {
		return nil, aerr
	}
	name := r.PathValue("name")
	s.mu.Lock()
	d := s.drives[name]
	s.mu.Unlock()
	if d == nil {
		return nil, notFound("Drive %s was not found.", name)
	}
	return d, nil
}

// handleSandboxAction serves POST /v2/sandboxes/{name}/fork. The route
// names the action with a wildcard because a literal "fork" would clash
// with POST /v2/sandboxes/drives/{name} on /v2/sandboxes/drives/fork;
// with a wildcard the drive route is the more specific one and wins.
func (s *Server) handleSandboxAction(w http.ResponseWriter, r *http.Request) *apiError {
	if r.PathValue("action") != "fork" {
		return notFound("No route for %s %s", r.Method, r.URL.Path)
	}
	return s.handleFork(w, r)
}

// handleGetOrCreateDrive serves POST /v2/sandboxes/drives/{name}: the
// drive of that name, made with the body's settings when missing.
func (s *Server) handleGetOrCreateDrive(w http.ResponseWriter, r *http.Request) *apiError {
	var body wire.DriveRequest
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	if aerr := s.checkProjectQuery(body.ProjectID); aerr != nil {
		return aerr
	}
	name := r.PathValue("name")
	if aerr := checkDriveName(name); aerr != nil {
		return aerr
	}
	if body.MaxSizeBytes != nil && *body.MaxSizeBytes <= 0 {
		return badRequest("maxSizeBytes must be positive.")
	}
	return s.writeLocked(w, func() any {
		d := s.drives[name]
		if d == nil {
			now := s.nowMs()
			d = &driveRec{seq: s.nextSeq(), id: "drv_" + s.ids.alnum(28), name: name, projectID: cmp.Or(body.ProjectID, s.cfg.project),
				region: cmp.Or(body.Region, defaultRegion), maxSize: defaultDriveSize, createdAt: now, updatedAt: now}
			if body.MaxSizeBytes != nil {
				d.maxSize = *body.MaxSizeBytes
			}
			if s.drives == nil {
				s.drives = map[string]*driveRec{}
			}
			s.drives[name] = d
		}
		return wire.DriveResponse{Drive: s.driveWire(d)}
	})
}

// handleGetDrive serves GET /v2/sandboxes/drives/{name}.
func (s *Server) handleGetDrive(w http.ResponseWriter, r *http.Request) *apiError {
	d, aerr := s.lookupDrive(r)
	if aerr != nil {
		return aerr
	}
	return s.writeLocked(w, func() any { return wire.DriveResponse{Drive: s.driveWire(d)} })
}

// handleDeleteDrive serves DELETE /v2/sandboxes/drives/{name}. A drive
// that a running sandbox mounts read-write is refused with 409.
func (s *Server) handleDeleteDrive(w http.ResponseWriter, r *http.Request) *apiError {
	d, aerr := s.lookupDrive(r)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drives[d.name] != d {
		return notFound("Drive %s was not found.", d.name)
	}
	if sb := s.driveUser(d.name); sb != nil {
		return errorf(http.StatusConflict, "drive_in_use", "Drive %s is mounted by sandbox %s.", d.name, sb.name)
	}
	delete(s.drives, d.name)
	d.updatedAt = s.nowMs()
	writeJSON(w, http.StatusOK, wire.DriveResponse{Drive: s.driveWire(d)})
	return nil
}

// handleListDrives serves GET /v2/sandboxes/drives: namePrefix, sortBy
// (createdAt or name), sortOrder (desc by default), limit and cursor.
func (s *Server) handleListDrives(w http.ResponseWriter, r *http.Request) *apiError {
	q := r.URL.Query()
	if aerr := s.checkProjectQuery(q.Get("projectId")); aerr != nil {
		return aerr
	}
	limit, desc, aerr := parsePaging(q)
	if aerr != nil {
		return aerr
	}
	byName := false
	switch q.Get("sortBy") {
	case "", "createdAt":
	case "name":
		byName = true
	default:
		return badRequest("Invalid sortBy %q: use createdAt or name.", q.Get("sortBy"))
	}
	s.mu.Lock()
	var recs []*driveRec
	for _, d := range s.drives {
		if strings.HasPrefix(d.name, q.Get("namePrefix")) {
			recs = append(recs, d)
		}
	}
	slices.SortFunc(recs, func(a, b *driveRec) int {
		c := cmp.Or(cmp.Compare(a.createdAt, b.createdAt), cmp.Compare(a.seq, b.seq))
		if byName {
			c = strings.Compare(a.name, b.name)
		}
		if desc {
			return -c
		}
		return c
	})
	page, pag, aerr := paginate(recs, limit, q.Get("cursor"))
	out := make([]wire.Drive, len(page))
	for i, d := range page {
		out[i] = s.driveWire(d)
	}
	s.mu.Unlock()
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, wire.ListDrivesResponse{Drives: out, Pagination: pag})
	return nil
}
