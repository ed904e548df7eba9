package local

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

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
	homeCwd            bool // no legacy runtime: cwd and HOME are /vercel
	timeout            int64
	policy             *wire.NetworkPolicyResp
	policySet          bool
	env                map[string]string
	tags               map[string]string
	ports              []int
	interactive        bool
	snapshotExpiration *int64
	keepLast           *wire.KeepLastSnapshots
	networkID          string
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

// createBody is the body of a create or fork: the public fields, and the
// private one the official CLI sends to get a sandbox it can open
// terminals in.
type createBody struct {
	wire.CreateRequest
	Interactive bool `json:"__interactive"`
}

// applyInteractive marks spec as created for terminals when body asks it.
// Such a create is refused up front, before anything exists, when the
// executor cannot run terminals: a client that needs interactivePort
// would otherwise fail after the create and leave the sandbox running.
func (s *Server) applyInteractive(spec *sandboxSpec, body *createBody) *apiError {
	if !body.Interactive {
		return nil
	}
	if _, ok := s.exec.(TTYExecutor); !ok {
		return badRequest("interactive sandboxes need an executor that runs terminals, such as hostexec or isolated")
	}
	spec.interactive = true
	return nil
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
		spec.runtime, spec.image, spec.homeCwd = req.Runtime, "", false
	}
	if req.Image != "" {
		spec.image, spec.runtime, spec.homeCwd = req.Image, "", true
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
	if aerr := s.envTooLarge(req.Env); aerr != nil {
		return aerr
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
	if aerr := refuseMounts(req.Mounts); aerr != nil {
		return aerr
	}
	return nil
}

// handleCreate serves POST /v2/sandboxes and POST /v3/sandboxes.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) *apiError {
	version, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	var body createBody
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	req := &body.CreateRequest
	if aerr := s.checkProject(req.ProjectID); aerr != nil {
		return aerr
	}
	// Hosted Vercel boots a create that names no legacy runtime (an image,
	// or nothing) in /vercel: recorded creates with neither answer cwd
	// "/vercel" (arugula-salad/wisp, e2e/providers/vercel/golden).
	spec := sandboxSpec{
		projectID:  req.ProjectID,
		persistent: true,
		region:     defaultRegion,
		vcpus:      defaultVCPUs,
		timeout:    defaultTimeoutMs,
		policy:     s.defaultPolicy(),
		homeCwd:    true,
	}
	if aerr := s.applyCreate(&spec, req); aerr != nil {
		return aerr
	}
	if aerr := s.applyInteractive(&spec, &body); aerr != nil {
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

	err := s.makeSandboxDir(dir)
	if err == nil && snap != nil {
		_, err = copyTree(dir, snap.dir)
	}
	if err != nil {
		_ = s.removeSandboxDir(dir)
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
		homeCwd:            spec.homeCwd,
		timeout:            spec.timeout,
		policy:             spec.policy,
		policySet:          spec.policySet,
		env:                spec.env,
		tags:               spec.tags,
		ports:              spec.ports,
		interactive:        spec.interactive,
		snapshotExpiration: spec.snapshotExpiration,
		keepLast:           spec.keepLast,
		networkID:          spec.networkID,
	}
	if snap != nil {
		// Hosted Vercel reports the snapshot a sandbox was made from as its
		// currentSnapshotId (recorded), which keeps the snapshot from
		// deleteOrphanSnapshots of its source sandbox.
		sb.currentSnapshotID, sb.syncedSnapshot = snap.id, snap.id
	}
	if err := s.makeCwd(sb); err != nil {
		_ = s.removeSandboxDir(dir)
		return sandboxReply{}, errorf(http.StatusInternalServerError, "internal_error", "cannot prepare the sandbox filesystem: %v", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = s.removeSandboxDir(dir)
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

// handleFork serves POST /v2/sandboxes/{name}/fork.
func (s *Server) handleFork(w http.ResponseWriter, r *http.Request) *apiError {
	name := r.PathValue("name")
	if aerr := s.checkProjectQuery(r.URL.Query().Get("projectId")); aerr != nil {
		return aerr
	}
	var body createBody
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	req := &body.CreateRequest
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
		homeCwd:            src.homeCwd,
		timeout:            src.timeout,
		policy:             src.policy,
		policySet:          src.policySet,
		env:                src.env,
		tags:               src.tags,
		ports:              src.ports,
		snapshotExpiration: src.snapshotExpiration,
		keepLast:           src.keepLast,
		networkID:          src.networkID,
	}
	fromSnap := src.currentSnapshotID
	s.mu.Unlock()
	if aerr := s.applyCreate(&spec, req); aerr != nil {
		return aerr
	}
	if aerr := s.applyInteractive(&spec, &body); aerr != nil {
		return aerr
	}
	reply, aerr := s.createSandbox(spec, fromSnap)
	if aerr != nil {
		return aerr
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}
