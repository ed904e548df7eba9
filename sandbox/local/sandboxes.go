package local

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// sandboxReply answers create, get and fork. Unlike wire.SandboxResponse it
// always carries resumed, as the real API does.
type sandboxReply struct {
	Sandbox wire.Sandbox `json:"sandbox"`
	Session wire.Session `json:"session"`
	Routes  []wire.Route `json:"routes"`
	Resumed bool         `json:"resumed"`
}

// sandboxSpec is the configuration of a sandbox to create.
type sandboxSpec struct {
	name               string
	projectID          string
	persistent         bool
	region             string
	failover           []string
	vcpus              int
	runtime            string
	image              string
	timeout            int64
	policy             *wire.NetworkPolicyResp
	policySet          bool
	env                map[string]string
	tags               map[string]string
	ports              []int
	snapshotExpiration *int64
	keepLast           *wire.KeepLastSnapshots
	networkID          string
	mounts             map[string]wire.Mount
}

func validateName(name string) *apiError {
	if len(name) > 128 || !namePattern.MatchString(name) {
		return badRequest("Invalid sandbox name %q: it must match ^[a-zA-Z0-9_-]+$ and have at most 128 characters.", name)
	}
	return nil
}

func validatePorts(ports []int) *apiError {
	if len(ports) > 15 {
		return badRequest("At most 15 ports can be exposed, got %d.", len(ports))
	}
	for _, p := range ports {
		if p < 1024 || p > 65535 {
			return badRequest("Port %d is out of range: ports must be between 1024 and 65535.", p)
		}
	}
	return nil
}

func validateTags(tags map[string]string) *apiError {
	if len(tags) > 5 {
		return badRequest("At most 5 tags are allowed, got %d.", len(tags))
	}
	for k, v := range tags {
		if k == "" {
			return badRequest("Tag keys must not be empty.")
		}
		if len(v) > 256 {
			return badRequest("The value of tag %q is longer than 256 characters.", k)
		}
	}
	return nil
}

func validateRegions(region string, failover []string) *apiError {
	if slices.Contains(failover, region) {
		return badRequest("failoverRegions must not contain the sandbox region %q.", region)
	}
	return nil
}

func validateResources(res *wire.Resources) *apiError {
	if res == nil {
		return nil
	}
	v := res.VCPUs
	if v < 1 || (v != 1 && v%2 != 0) || v > maxVCPUs {
		return badRequest("Invalid vcpus %d: use 1 or an even number up to %d.", v, maxVCPUs)
	}
	if res.Memory != nil && *res.Memory != v*memoryPerVCPU {
		return badRequest("Invalid memory %d: it must be vcpus × %d (%d).", *res.Memory, memoryPerVCPU, v*memoryPerVCPU)
	}
	return nil
}

func (s *Server) validateTimeout(t int64) *apiError {
	if t < minTimeoutMs || t > s.cfg.maxTimeout.Milliseconds() {
		return badRequest("Invalid timeout %d: it must be between %d and %d ms.", t, minTimeoutMs, s.cfg.maxTimeout.Milliseconds())
	}
	return nil
}

func validateKeepLast(k *wire.KeepLastSnapshots) *apiError {
	if k != nil && (k.Count < 1 || k.Count > 10) {
		return badRequest("keepLastSnapshots.count must be between 1 and 10.")
	}
	return nil
}

// pinImage returns the digest-pinned form of an image reference.
func pinImage(ref string) string {
	if ref == "" || strings.Contains(ref, "@sha256:") {
		return ref
	}
	repo := ref
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		repo = ref[:i]
	}
	sum := sha256.Sum256([]byte(ref))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// applyCreate overlays the fields of a create or fork body on spec and
// validates the result.
func (s *Server) applyCreate(spec *sandboxSpec, req *wire.CreateRequest) *apiError {
	if req.Name != "" {
		if aerr := validateName(req.Name); aerr != nil {
			return aerr
		}
		spec.name = req.Name
	}
	if req.Ports != nil {
		if aerr := validatePorts(req.Ports); aerr != nil {
			return aerr
		}
		spec.ports = slices.Clone(req.Ports)
	}
	if req.Timeout != nil {
		if aerr := s.validateTimeout(*req.Timeout); aerr != nil {
			return aerr
		}
		spec.timeout = *req.Timeout
	}
	if req.Resources != nil {
		if aerr := validateResources(req.Resources); aerr != nil {
			return aerr
		}
		spec.vcpus = req.Resources.VCPUs
	}
	if req.Runtime != "" && req.Image != "" {
		return badRequest("runtime and image cannot be used together.")
	}
	if req.Runtime != "" {
		spec.runtime, spec.image = req.Runtime, ""
	}
	if req.Image != "" {
		spec.image, spec.runtime = req.Image, ""
	}
	if req.Persistent != nil {
		spec.persistent = *req.Persistent
	}
	if len(req.NetworkPolicy) > 0 && string(req.NetworkPolicy) != "null" {
		pol, aerr := policyFromRequest(req.NetworkPolicy)
		if aerr != nil {
			return aerr
		}
		spec.policy, spec.policySet = pol, true
	}
	if req.Env != nil {
		spec.env = maps.Clone(req.Env)
	}
	if req.Tags != nil {
		if aerr := validateTags(req.Tags); aerr != nil {
			return aerr
		}
		spec.tags = maps.Clone(req.Tags)
	}
	if req.SnapshotExpiration != nil {
		if *req.SnapshotExpiration < 0 {
			return badRequest("snapshotExpiration must not be negative.")
		}
		spec.snapshotExpiration = ptr(*req.SnapshotExpiration)
	}
	if req.KeepLastSnapshots != nil {
		if aerr := validateKeepLast(req.KeepLastSnapshots); aerr != nil {
			return aerr
		}
		k := *req.KeepLastSnapshots
		spec.keepLast = &k
	}
	if req.Region != "" {
		spec.region = req.Region
	}
	if req.FailoverRegions != nil {
		spec.failover = slices.Clone(req.FailoverRegions)
	}
	if aerr := validateRegions(spec.region, spec.failover); aerr != nil {
		return aerr
	}
	if req.NetworkID != "" {
		spec.networkID = req.NetworkID
	}
	if req.Mounts != nil {
		spec.mounts = maps.Clone(req.Mounts)
	}
	return nil
}

// handleCreate serves POST /v2/sandboxes and POST /v3/sandboxes.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) *apiError {
	version, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var req wire.CreateRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return aerr
	}
	if aerr := s.checkProject(req.ProjectID); aerr != nil {
		return aerr
	}
	spec := sandboxSpec{
		projectID:  req.ProjectID,
		persistent: true,
		region:     defaultRegion,
		vcpus:      defaultVCPUs,
		timeout:    defaultTimeoutMs,
		policy:     &wire.NetworkPolicyResp{Mode: "allow-all"},
	}
	if aerr := s.applyCreate(&spec, &req); aerr != nil {
		return aerr
	}
	if spec.runtime == "" && spec.image == "" {
		if version == "v3" {
			spec.image = defaultImage
		} else {
			spec.runtime = defaultRuntime
		}
	}
	var fromSnap string
	if req.Source != nil {
		switch req.Source.Type {
		case "snapshot":
			if req.Source.SnapshotID == "" {
				return badRequest("source.snapshotId is required for a snapshot source.")
			}
			fromSnap = req.Source.SnapshotID
		case "git", "tarball":
			if req.Source.URL == "" {
				return badRequest("source.url is required for a %s source.", req.Source.Type)
			}
			s.log.Warn("local: git and tarball sources are not emulated; the sandbox starts empty", "type", req.Source.Type)
		default:
			return badRequest("Unknown source type %q.", req.Source.Type)
		}
	}
	reply, aerr := s.createSandbox(spec, fromSnap)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// createSandbox creates a sandbox from spec and boots its first session.
// When fromSnap is set the filesystem starts as a copy of that snapshot, and
// a missing snapshot is 410 snapshot_not_found.
func (s *Server) createSandbox(spec sandboxSpec, fromSnap string) (sandboxReply, *apiError) {
	s.createMu.Lock()
	defer s.createMu.Unlock()

	s.mu.Lock()
	if spec.name == "" {
		for {
			spec.name = s.ids.sandboxName()
			if s.sandboxes[spec.name] == nil {
				break
			}
		}
	} else if s.sandboxes[spec.name] != nil {
		s.mu.Unlock()
		return sandboxReply{}, badRequest("A sandbox with the name '%s' already exists for this project.", spec.name)
	}
	var snap *snapshotRec
	if fromSnap != "" {
		snap = s.snapshots[fromSnap]
		if snap == nil || snap.status != snapCreated {
			s.mu.Unlock()
			return sandboxReply{}, errorf(http.StatusGone, codeSnapNotFound, "Snapshot %s was not found.", fromSnap)
		}
		snap.lastUsedAt = ptr(s.nowMs())
	}
	dir := filepath.Join(s.root, "sandboxes", spec.name+"-"+strings.ToLower(s.ids.alnum(6)))
	s.mu.Unlock()

	var err error
	if snap != nil {
		_, err = copyTree(dir, snap.dir)
	}
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		// Nothing was created: a 5xx is honest and safe to retry.
		return sandboxReply{}, errorf(http.StatusInternalServerError, "internal_error", "cannot prepare the sandbox filesystem: %v", err)
	}
	sb := &sandboxRec{
		name:               spec.name,
		projectID:          spec.projectID,
		dir:                dir,
		persistent:         spec.persistent,
		region:             spec.region,
		failover:           spec.failover,
		vcpus:              spec.vcpus,
		runtime:            spec.runtime,
		image:              spec.image,
		timeout:            spec.timeout,
		policy:             spec.policy,
		policySet:          spec.policySet,
		env:                spec.env,
		tags:               spec.tags,
		ports:              spec.ports,
		snapshotExpiration: spec.snapshotExpiration,
		keepLast:           spec.keepLast,
		networkID:          spec.networkID,
		mounts:             spec.mounts,
	}
	if err := s.makeCwd(sb); err != nil {
		_ = os.RemoveAll(dir)
		return sandboxReply{}, errorf(http.StatusInternalServerError, "internal_error", "cannot prepare the sandbox filesystem: %v", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = os.RemoveAll(dir)
		return sandboxReply{}, errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	now := s.nowMs()
	sb.seq = s.nextSeq()
	sb.createdAt, sb.updatedAt = now, now
	s.sandboxes[sb.name] = sb
	sourceSnap := ""
	if snap != nil {
		sourceSnap = snap.id
	}
	sess := s.startSession(sb, sourceSnap)
	return s.replyLocked(sb, sess, false), nil
}

// replyLocked builds the create/get/fork answer. Called with s.mu held.
func (s *Server) replyLocked(sb *sandboxRec, sess *sessionRec, resumed bool) sandboxReply {
	return sandboxReply{
		Sandbox: s.sandboxWire(sb),
		Session: sessionWire(sess),
		Routes:  routesFor(sb.name, sb.ports),
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

// handleGetSandbox serves GET /v2/sandboxes/{name}[?resume=true].
func (s *Server) handleGetSandbox(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	q := r.URL.Query()
	if aerr := s.checkProjectQuery(q.Get("projectId")); aerr != nil {
		return aerr
	}
	sb, aerr := s.lookupSandbox(name)
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

// updateReply answers PATCH and DELETE; routes is sent when ports changed.
type updateReply struct {
	Sandbox wire.Sandbox  `json:"sandbox"`
	Routes  *[]wire.Route `json:"routes,omitempty"`
}

// handleUpdateSandbox serves PATCH /v2/sandboxes/{name}.
func (s *Server) handleUpdateSandbox(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	if aerr := s.checkProjectQuery(r.URL.Query().Get("projectId")); aerr != nil {
		return aerr
	}
	data, aerr := readBody(r)
	if aerr != nil {
		return aerr
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(data, &body); err != nil {
		return badRequest("invalid request body: %v", err)
	}
	sb, aerr := s.lookupSandbox(name)
	if aerr != nil {
		return aerr
	}

	// Decode and validate everything first, then apply it all at once.
	var (
		persistent  *bool
		res         *wire.Resources
		timeout     *int64
		policy      *wire.NetworkPolicyResp
		tags        map[string]string
		tagsSet     bool
		ports       []int
		portsSet    bool
		snapExp     *int64
		snapExpSet  bool
		keepLast    *wire.KeepLastSnapshots
		keepLastSet bool
		currentSnap *string
		region      *string
		failover    []string
		failoverSet bool
		networkID   *string
		mounts      map[string]wire.Mount
		mountsSet   bool
	)
	// Keys where null means "clear" are decoded as given; for the others a
	// null counts as absent.
	checks := []*apiError{}
	add := func(_ bool, aerr *apiError) { checks = append(checks, aerr) }
	add(patchField(body, "persistent", false, &persistent, nil))
	add(patchField(body, "resources", false, &res, validateResources))
	add(patchField(body, "timeout", false, &timeout, func(v *int64) *apiError { return s.validateTimeout(*v) }))
	if raw, ok := body["networkPolicy"]; ok && string(raw) != "null" {
		policy, aerr = policyFromRequest(raw)
		checks = append(checks, aerr)
	}
	tagsSet, aerr = patchField(body, "tags", true, &tags, validateTags)
	checks = append(checks, aerr)
	portsSet, aerr = patchField(body, "ports", true, &ports, validatePorts)
	checks = append(checks, aerr)
	snapExpSet, aerr = patchField(body, "snapshotExpiration", true, &snapExp, func(v *int64) *apiError {
		if v != nil && *v < 0 {
			return badRequest("snapshotExpiration must not be negative.")
		}
		return nil
	})
	checks = append(checks, aerr)
	keepLastSet, aerr = patchField(body, "keepLastSnapshots", true, &keepLast, validateKeepLast)
	checks = append(checks, aerr)
	add(patchField(body, "currentSnapshotId", false, &currentSnap, nil))
	add(patchField(body, "region", false, &region, func(v *string) *apiError {
		if *v == "" {
			return badRequest("region must not be empty.")
		}
		return nil
	}))
	failoverSet, aerr = patchField(body, "failoverRegions", true, &failover, nil)
	checks = append(checks, aerr)
	add(patchField(body, "networkId", false, &networkID, nil))
	mountsSet, aerr = patchField(body, "mounts", true, &mounts, nil)
	checks = append(checks, aerr)
	for _, aerr := range checks {
		if aerr != nil {
			return aerr // the first problem, in the order of the keys above
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.deleted {
		return notFound("Sandbox %s was not found.", name)
	}
	newRegion := sb.region
	if region != nil {
		newRegion = *region
	}
	newFailover := sb.failover
	if failoverSet {
		newFailover = failover
	}
	if aerr := validateRegions(newRegion, newFailover); aerr != nil {
		return aerr
	}
	if currentSnap != nil && *currentSnap != "" {
		snap := s.snapshots[*currentSnap]
		if snap == nil || snap.status != snapCreated {
			return badRequest("Snapshot %s was not found.", *currentSnap)
		}
	}

	if persistent != nil {
		sb.persistent = *persistent
	}
	if res != nil {
		sb.vcpus = res.VCPUs
	}
	if timeout != nil {
		sb.timeout = *timeout
	}
	if policy != nil {
		sb.policy, sb.policySet = policy, true
	}
	if tagsSet {
		sb.tags = tags
	}
	if portsSet {
		sb.ports = ports
	}
	if snapExpSet {
		sb.snapshotExpiration = snapExp
	}
	if keepLastSet {
		sb.keepLast = keepLast
	}
	if currentSnap != nil {
		sb.currentSnapshotID = *currentSnap
	}
	sb.region = newRegion
	sb.failover = newFailover
	if networkID != nil {
		sb.networkID = *networkID
	}
	if mountsSet {
		sb.mounts = mounts
	}
	sb.updatedAt = s.nowMs()
	reply := updateReply{Sandbox: s.sandboxWire(sb)}
	if portsSet {
		routes := routesFor(sb.name, sb.ports)
		reply.Routes = &routes
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// handleDeleteSandbox serves DELETE /v2/sandboxes/{name}.
func (s *Server) handleDeleteSandbox(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	q := r.URL.Query()
	if aerr := s.checkProjectQuery(q.Get("projectId")); aerr != nil {
		return aerr
	}
	sb, aerr := s.lookupSandbox(name)
	if aerr != nil {
		return aerr
	}
	sb.lc.Lock()
	defer sb.lc.Unlock()
	s.mu.Lock()
	if sb.deleted {
		s.mu.Unlock()
		return notFound("Sandbox %s was not found.", name)
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

	for _, d := range append(orphanDirs, sb.dir) {
		if err := os.RemoveAll(d); err != nil {
			s.log.Warn("local: cannot remove directory", "err", err)
		}
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// handleFork serves POST /v2/sandboxes/{name}/fork.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	if aerr := s.checkProjectQuery(r.URL.Query().Get("projectId")); aerr != nil {
		return aerr
	}
	var req wire.CreateRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return aerr
	}
	src, aerr := s.lookupSandbox(name)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	spec := sandboxSpec{
		projectID:          src.projectID,
		persistent:         src.persistent,
		region:             src.region,
		failover:           src.failover,
		vcpus:              src.vcpus,
		runtime:            src.runtime,
		image:              src.image,
		timeout:            src.timeout,
		policy:             src.policy,
		policySet:          src.policySet,
		env:                src.env,
		tags:               src.tags,
		ports:              src.ports,
		snapshotExpiration: src.snapshotExpiration,
		keepLast:           src.keepLast,
		networkID:          src.networkID,
		mounts:             src.mounts,
	}
	fromSnap := src.currentSnapshotID
	s.mu.Unlock()
	if aerr := s.applyCreate(&spec, &req); aerr != nil {
		return aerr
	}
	reply, aerr := s.createSandbox(spec, fromSnap)
	if aerr != nil {
		return aerr
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

// patchField decodes body[key] into dst and checks it. It reports whether
// the key was given. When nullable is false a null value counts as absent;
// when true it is decoded (clearing dst) and reported as given.
func patchField[T any](body map[string]json.RawMessage, key string, nullable bool, dst *T, check func(T) *apiError) (bool, *apiError) {
	raw, ok := body[key]
	if !ok || (!nullable && string(raw) == "null") {
		return false, nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return true, badRequest("invalid %s: %v", key, err)
	}
	if check != nil {
		if aerr := check(*dst); aerr != nil {
			return true, aerr
		}
	}
	return true, nil
}
