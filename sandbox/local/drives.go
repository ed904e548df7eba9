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

// Drives are records only: the server keeps no data for them and refuses
// to mount one. A mount would have to show the drive's files at the mount
// path to every command, and neither executor can: hostexec runs host
// processes, for which an absolute path such as /mnt/data is the host's,
// and binding a directory into the isolated executor's root would need a
// mount for each command that the server cannot ask of an Executor. A
// link in the sandbox's tree would lead out of it, which the server's own
// file operations refuse to follow, and a copy in and out would not be the
// live volume a drive is. So a create, fork or update that mounts a drive
// is refused with 400, and nothing is made.

// refuseMounts refuses drive mounts; an empty set (which an update sends
// to remove every mount) is accepted.
func refuseMounts(mounts map[string]wire.Mount) *apiError {
	if len(mounts) == 0 {
		return nil
	}
	return badRequest("Drive mounts are not supported by this local server: drives are kept as records only, and nothing would be mounted.")
}

// driveRec is a drive. Guarded by Server.mu.
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

// driveWire renders d. No sandbox mounts a drive here, so it names none.
func driveWire(d *driveRec) wire.Drive {
	return wire.Drive{ID: d.id, Name: d.name, ProjectID: d.projectID, Region: d.region, MaxSizeBytes: d.maxSize,
		CreatedAt: d.createdAt, UpdatedAt: d.updatedAt}
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
		return wire.DriveResponse{Drive: driveWire(d)}
	})
}

// handleGetDrive serves GET /v2/sandboxes/drives/{name}.
func (s *Server) handleGetDrive(w http.ResponseWriter, r *http.Request) *apiError {
	d, aerr := s.lookupDrive(r)
	if aerr != nil {
		return aerr
	}
	return s.writeLocked(w, func() any { return wire.DriveResponse{Drive: driveWire(d)} })
}

// handleDeleteDrive serves DELETE /v2/sandboxes/drives/{name}.
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
	delete(s.drives, d.name)
	d.updatedAt = s.nowMs()
	writeJSON(w, http.StatusOK, wire.DriveResponse{Drive: driveWire(d)})
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
		out[i] = driveWire(d)
	}
	s.mu.Unlock()
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, wire.ListDrivesResponse{Drives: out, Pagination: pag})
	return nil
}
