package local

import (
	"encoding/json"
	"net/http"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// updateReply answers PATCH /v2/sandboxes/{name}.
type updateReply struct {
	Sandbox wire.Sandbox  `json:"sandbox"`
	Routes  *[]wire.Route `json:"routes,omitempty"`
}

// handleUpdateSandbox serves PATCH /v2/sandboxes/{name}: it decodes and
// validates the whole patch first, then applies it at once.
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
	p, aerr := s.decodePatch(body)
	if aerr != nil {
		return aerr
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if sb.deleted {
		return notFound("Sandbox %s was not found.", name)
	}
	if aerr := s.checkPatchLocked(sb, &p); aerr != nil {
		return aerr
	}
	p.apply(sb)
	sb.updatedAt = s.nowMs()
	reply := updateReply{Sandbox: s.sandboxWire(sb)}
	if p.portsSet {
		routes := sb.routes()
		reply.Routes = &routes
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}

// sandboxPatch is a decoded PATCH body. A nil pointer is a key that was
// absent (or null where null means absent); a ...Set flag marks a key
// that was given, where null means "clear".
type sandboxPatch struct {
	persistent   *bool
	res          *wire.Resources
	timeout      *int64
	policy       *wire.NetworkPolicyResp
	tags         map[string]string
	tagsSet      bool
	ports        []int
	portsSet     bool
	snapExp      *int64
	snapExpSet   bool
	keepLast     *wire.KeepLastSnapshots
	keepLastSet  bool
	currentSnap  *string
	region       *string
	failover     []string
	failoverSet  bool
	networkID    string // "" with networkIDSet: out of its private network
	networkIDSet bool
}

// decodePatch decodes and checks every key of body. It returns the first
// problem, in the order of the keys below.
func (s *Server) decodePatch(body map[string]json.RawMessage) (sandboxPatch, *apiError) {
	var p sandboxPatch
	var first *apiError
	check := func(aerr *apiError) {
		if first == nil {
			first = aerr
		}
	}
	given := func(set *bool) func(bool, *apiError) {
		return func(ok bool, aerr *apiError) { *set = ok; check(aerr) }
	}
	ignore := func(_ bool, aerr *apiError) { check(aerr) }

	ignore(patchField(body, "persistent", false, &p.persistent, nil))
	ignore(patchField(body, "resources", false, &p.res, validateResources))
	ignore(patchField(body, "timeout", false, &p.timeout, func(v *int64) *apiError { return s.validateTimeout(*v) }))
	if raw, ok := body["networkPolicy"]; ok && string(raw) != "null" {
		var aerr *apiError
		p.policy, aerr = policyFromRequest(raw)
		check(aerr)
	}
	given(&p.tagsSet)(patchField(body, "tags", true, &p.tags, validateTags))
	given(&p.portsSet)(patchField(body, "ports", true, &p.ports, validatePorts))
	given(&p.snapExpSet)(patchField(body, "snapshotExpiration", true, &p.snapExp, validateSnapshotExpiration))
	given(&p.keepLastSet)(patchField(body, "keepLastSnapshots", true, &p.keepLast, validateKeepLast))
	ignore(patchField(body, "currentSnapshotId", false, &p.currentSnap, nil))
	ignore(patchField(body, "region", false, &p.region, validateRegion))
	given(&p.failoverSet)(patchField(body, "failoverRegions", true, &p.failover, nil))
	given(&p.networkIDSet)(patchField(body, "networkId", true, &p.networkID, nil))
	var mounts map[string]wire.Mount
	ignore(patchField(body, "mounts", true, &mounts, refuseMounts))
	return p, first
}

func validateSnapshotExpiration(v *int64) *apiError {
	if v != nil && *v < 0 {
		return badRequest("snapshotExpiration must not be negative.")
	}
	return nil
}

func validateRegion(v *string) *apiError {
	if *v == "" {
		return badRequest("region must not be empty.")
	}
	return nil
}

// checkPatchLocked checks what depends on the sandbox's state: the regions
// as they will be, and the snapshot to make current. It settles p.region
// and p.failover. Called with s.mu held.
func (s *Server) checkPatchLocked(sb *sandboxRec, p *sandboxPatch) *apiError {
	if p.region == nil {
		p.region = &sb.region
	}
	if !p.failoverSet {
		p.failover, p.failoverSet = sb.failover, true
	}
	if aerr := validateRegions(*p.region, p.failover); aerr != nil {
		return aerr
	}
	if p.currentSnap != nil && *p.currentSnap != "" {
		snap := s.snapshots[*p.currentSnap]
		if snap == nil || snap.status != snapCreated {
			return badRequest("Snapshot %s was not found.", *p.currentSnap)
		}
	}
	return nil
}

// apply sets what p changes on sb.
func (p *sandboxPatch) apply(sb *sandboxRec) {
	setIf(&sb.persistent, p.persistent)
	if p.res != nil {
		sb.vcpus = p.res.VCPUs
	}
	setIf(&sb.timeout, p.timeout)
	if p.policy != nil {
		sb.policy, sb.policySet = p.policy, true
	}
	setIfGiven(&sb.tags, p.tags, p.tagsSet)
	setIfGiven(&sb.ports, p.ports, p.portsSet)
	setIfGiven(&sb.snapshotExpiration, p.snapExp, p.snapExpSet)
	setIfGiven(&sb.keepLast, p.keepLast, p.keepLastSet)
	setIf(&sb.currentSnapshotID, p.currentSnap)
	setIf(&sb.region, p.region)
	setIfGiven(&sb.failover, p.failover, p.failoverSet)
	setIfGiven(&sb.networkID, p.networkID, p.networkIDSet)
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func setIfGiven[T any](dst *T, v T, given bool) {
	if given {
		*dst = v
	}
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
