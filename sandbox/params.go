package sandbox

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Limits the API enforces and the client checks before sending.
const (
	MaxNameLength = 128
	MaxPorts      = 15
	MaxTags       = 5
	MaxTagValue   = 256
	MinPort       = 1024
	MaxPort       = 65535
)

// ValidateName reports whether name is a valid sandbox name.
func ValidateName(name string) error {
	switch {
	case name == "":
		return apierr.Invalid("Name", "empty")
	case len(name) > MaxNameLength:
		return apierr.Invalid("Name", "%d characters, the maximum is %d", len(name), MaxNameLength)
	case !namePattern.MatchString(name):
		return apierr.Invalid("Name", "%q may contain only letters, digits, '_' and '-'", name)
	}
	return nil
}

// Source is where a new sandbox's filesystem comes from. Use GitSource,
// TarballSource or SnapshotSource.
type Source struct {
	kind string
	w    wire.Source
}

// GitParams refine a git source. The zero value clones the default branch
// in full, without credentials.
type GitParams struct {
	Depth    int    // shallow clone depth; 0 means full
	Revision string // branch, tag or commit
	Username string // for private repositories
	Password string // a token; never logged
}

// GitSource clones a git repository into the sandbox.
func GitSource(url string, p GitParams) *Source {
	s := &Source{kind: "git", w: wire.Source{Type: "git", URL: url, Revision: p.Revision, Username: p.Username, Password: p.Password}}
	if p.Depth != 0 {
		s.w.Depth = ptr(p.Depth)
	}
	return s
}

// TarballSource extracts a tarball from url into the sandbox.
func TarballSource(url string) *Source {
	return &Source{kind: "tarball", w: wire.Source{Type: "tarball", URL: url}}
}

// SnapshotSource boots the sandbox from a snapshot.
func SnapshotSource(snapshotID string) *Source {
	return &Source{kind: "snapshot", w: wire.Source{Type: "snapshot", SnapshotID: snapshotID}}
}

// String describes the source without credentials.
func (s *Source) String() string {
	switch s.kind {
	case "snapshot":
		return "snapshot " + s.w.SnapshotID
	default:
		return s.kind + " " + s.w.URL
	}
}

func (s *Source) validate() error {
	switch s.kind {
	case "git", "tarball":
		if !strings.HasPrefix(s.w.URL, "https://") && !strings.HasPrefix(s.w.URL, "http://") {
			return apierr.Invalid("Source.URL", "must be an http(s) URL")
		}
		if s.w.Depth != nil && *s.w.Depth < 1 {
			return apierr.Invalid("Source.Depth", "must be at least 1, got %d", *s.w.Depth)
		}
		if (s.w.Username == "") != (s.w.Password == "") && s.w.Username != "" {
			return apierr.Invalid("Source.Password", "a username needs a password")
		}
	case "snapshot":
		if s.w.SnapshotID == "" {
			return apierr.Invalid("Source.SnapshotID", "empty")
		}
	default:
		return apierr.Invalid("Source", "use GitSource, TarballSource or SnapshotSource")
	}
	return nil
}

// CreateParams describe a new sandbox. The zero value is valid: the server
// picks a name, the default image, 2 vCPUs and a 5-minute timeout.
type CreateParams struct {
	// Name must be unique in the project; empty lets the server pick one.
	Name string
	// Runtime selects a legacy runtime image ("node24", "python3.13");
	// Image selects a container image. At most one may be set.
	Runtime string
	Image   string
	VCPUs   int           // 0: server default (2); 1 or an even number
	Timeout time.Duration // session timeout; 0: server default (5 min)
	Ports   []int         // exposed ports, 1024–65535, at most 15
	Env     map[string]string
	Tags    map[string]string // at most 5
	Source  *Source
	// NetworkPolicy nil means the server default (allow all).
	NetworkPolicy *NetworkPolicy
	// Persistent nil means the server default (true): the filesystem is
	// snapshotted on stop and restored on resume.
	Persistent         *bool
	Region             string
	FailoverRegions    []string
	SnapshotExpiration *time.Duration // 0: snapshots never expire
	KeepLastSnapshots  *KeepLastSnapshots
	NetworkID          string
	Mounts             map[string]Mount
}

// Validate reports the first problem that the API would refuse.
func (p *CreateParams) Validate() error {
	if p.Name != "" {
		if err := ValidateName(p.Name); err != nil {
			return err
		}
	}
	if p.Runtime != "" && p.Image != "" {
		return apierr.Invalid("Runtime", "Runtime and Image cannot both be set")
	}
	if p.Source != nil {
		if err := p.Source.validate(); err != nil {
			return err
		}
		if p.Source.kind == "snapshot" && (p.Runtime != "" || p.Image != "") {
			return apierr.Invalid("Source", "a snapshot source cannot be combined with Runtime or Image")
		}
	}
	return validateCommon(p.VCPUs, p.Timeout, p.Ports, p.Tags, p.Env, p.NetworkPolicy, p.Region,
		p.FailoverRegions, p.SnapshotExpiration, p.KeepLastSnapshots, p.Mounts)
}

func validateCommon(vcpus int, timeout time.Duration, ports []int, tags, env map[string]string,
	np *NetworkPolicy, region string, failover []string, snapExp *time.Duration,
	keep *KeepLastSnapshots, mounts map[string]Mount) error {
	if vcpus < 0 {
		return apierr.Invalid("VCPUs", "negative (%d)", vcpus)
	}
	if vcpus > 1 && vcpus%2 != 0 {
		return apierr.Invalid("VCPUs", "must be 1 or an even number, got %d", vcpus)
	}
	if timeout < 0 {
		return apierr.Invalid("Timeout", "negative duration %s", timeout)
	}
	if timeout > 0 && timeout < time.Second {
		return apierr.Invalid("Timeout", "%s is below the minimum of 1s", timeout)
	}
	if err := validatePorts(ports); err != nil {
		return err
	}
	if len(tags) > MaxTags {
		return apierr.Invalid("Tags", "%d tags, the maximum is %d", len(tags), MaxTags)
	}
	for k, v := range tags {
		if k == "" {
			return apierr.Invalid("Tags", "empty key")
		}
		if r := wire.TextFault(k); r != "" {
			return apierr.Invalid("Tags", "key %q %s", k, r)
		}
		if len(v) > MaxTagValue {
			return apierr.Invalid("Tags["+k+"]", "value longer than %d characters", MaxTagValue)
		}
		if r := wire.TextFault(v); r != "" {
			return apierr.Invalid("Tags["+k+"]", "value %s", r)
		}
	}
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || wire.TextFault(k) != "" {
			return apierr.Invalid("Env", "invalid variable name %q", k)
		}
		if r := wire.TextFault(v); r != "" {
			return apierr.Invalid("Env["+k+"]", "value %s", r)
		}
	}
	if n := wire.EnvPayloadSize(env); n > wire.MaxEnvPayload {
		return apierr.Invalid("Env", "%d bytes as JSON, above the %d that hosted Vercel accepts", n, wire.MaxEnvPayload)
	}
	if err := np.Validate(); err != nil {
		return err
	}
	if region != "" && slices.Contains(failover, region) {
		return apierr.Invalid("FailoverRegions", "must not contain the primary region %q", region)
	}
	if snapExp != nil {
		if err := validateSnapshotExpiration("SnapshotExpiration", *snapExp); err != nil {
			return err
		}
	}
	if keep != nil {
		if keep.Count < 1 || keep.Count > 10 {
			return apierr.Invalid("KeepLastSnapshots.Count", "must be 1–10, got %d", keep.Count)
		}
		if keep.Expiration != nil && *keep.Expiration < 0 {
			return apierr.Invalid("KeepLastSnapshots.Expiration", "negative duration %s", *keep.Expiration)
		}
	}
	for path, m := range mounts {
		if !strings.HasPrefix(path, "/") {
			return apierr.Invalid("Mounts", "mount path %q must be absolute", path)
		}
		if m.Drive == "" {
			return apierr.Invalid("Mounts["+path+"].Drive", "empty")
		}
		if m.Mode != "" && m.Mode != "read-write" && m.Mode != "snapshot" {
			return apierr.Invalid("Mounts["+path+"].Mode", "must be \"read-write\" or \"snapshot\", got %q", m.Mode)
		}
	}
	return nil
}

func validatePorts(ports []int) error {
	if len(ports) > MaxPorts {
		return apierr.Invalid("Ports", "%d ports, the maximum is %d", len(ports), MaxPorts)
	}
	seen := map[int]bool{}
	for i, p := range ports {
		if p < MinPort || p > MaxPort {
			return apierr.Invalid(fmt.Sprintf("Ports[%d]", i), "%d is outside %d–%d", p, MinPort, MaxPort)
		}
		if seen[p] {
			return apierr.Invalid(fmt.Sprintf("Ports[%d]", i), "%d is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

func keepToWire(k *KeepLastSnapshots) *wire.KeepLastSnapshots {
	if k == nil {
		return nil
	}
	w := &wire.KeepLastSnapshots{Count: k.Count, DeleteEvicted: k.DeleteEvicted}
	if k.Expiration != nil {
		w.Expiration = ptr(wire.Millis(*k.Expiration))
	}
	return w
}

func mountsToWire(m map[string]Mount) map[string]wire.Mount {
	if m == nil {
		return nil
	}
	out := make(map[string]wire.Mount, len(m))
	for p, v := range m {
		out[p] = wire.Mount{Drive: v.Drive, Mode: v.Mode}
	}
	return out
}

func (p *CreateParams) toWire(project string) (*wire.CreateRequest, error) {
	var np json.RawMessage
	if p.NetworkPolicy != nil {
		var err error
		if np, err = json.Marshal(p.NetworkPolicy.toWire()); err != nil {
			return nil, err
		}
	}
	ports := p.Ports
	if ports == nil {
		ports = []int{}
	}
	w := &wire.CreateRequest{
		ProjectID: project, Name: p.Name, Ports: ports, Runtime: p.Runtime, Image: p.Image,
		Persistent: p.Persistent, NetworkPolicy: np, Env: p.Env, Tags: p.Tags, Region: p.Region,
		FailoverRegions: p.FailoverRegions, KeepLastSnapshots: keepToWire(p.KeepLastSnapshots),
		NetworkID: p.NetworkID, Mounts: mountsToWire(p.Mounts),
	}
	if p.Source != nil {
		src := p.Source.w
		w.Source = &src
	}
	if p.Timeout > 0 {
		w.Timeout = ptr(wire.Millis(p.Timeout))
	}
	if p.VCPUs > 0 {
		w.Resources = &wire.Resources{VCPUs: p.VCPUs}
	}
	if p.SnapshotExpiration != nil {
		w.SnapshotExpiration = ptr(wire.Millis(*p.SnapshotExpiration))
	}
	return w, nil
}

// ForkParams override values copied from the source sandbox. Zero fields
// keep the source's value.
type ForkParams struct {
	Name               string
	Image              string
	VCPUs              int
	Timeout            time.Duration
	Ports              []int // nil: copy the source's ports
	Env                map[string]string
	Tags               map[string]string
	NetworkPolicy      *NetworkPolicy
	Persistent         *bool
	Region             string
	FailoverRegions    []string
	SnapshotExpiration *time.Duration
	KeepLastSnapshots  *KeepLastSnapshots
	NetworkID          string
}

// Validate reports the first problem that the API would refuse.
func (p *ForkParams) Validate() error {
	if p.Name != "" {
		if err := ValidateName(p.Name); err != nil {
			return err
		}
	}
	return validateCommon(p.VCPUs, p.Timeout, p.Ports, p.Tags, p.Env, p.NetworkPolicy, p.Region,
		p.FailoverRegions, p.SnapshotExpiration, p.KeepLastSnapshots, nil)
}

func (p *ForkParams) toWire() *wire.ForkRequest {
	w := &wire.ForkRequest{Name: p.Name, Image: p.Image, Ports: p.Ports, Env: p.Env, Tags: p.Tags,
		NetworkPolicy: p.NetworkPolicy.toWire(), Persistent: p.Persistent, Region: p.Region,
		FailoverRegions: p.FailoverRegions, KeepLastSnapshots: keepToWire(p.KeepLastSnapshots), NetworkID: p.NetworkID}
	if p.VCPUs > 0 {
		w.Resources = &wire.Resources{VCPUs: p.VCPUs}
	}
	if p.Timeout > 0 {
		w.Timeout = ptr(wire.Millis(p.Timeout))
	}
	if p.SnapshotExpiration != nil {
		w.SnapshotExpiration = ptr(wire.Millis(*p.SnapshotExpiration))
	}
	return w
}

// UpdateParams change a sandbox's configuration. Only set fields are sent.
type UpdateParams struct {
	Persistent *bool
	VCPUs      int // 0: unchanged
	// Timeout is the default session timeout. Sandbox.Update also extends
	// the running session to it.
	Timeout time.Duration
	// NetworkPolicy applies to future sessions; Sandbox.Update also applies
	// it to the running session.
	NetworkPolicy *NetworkPolicy
	Tags          map[string]string // replaces all tags when non-nil
	// Ports replaces the whole list when non-nil; an empty, non-nil slice
	// removes every port.
	Ports              []int
	SnapshotExpiration *time.Duration
	KeepLastSnapshots  *KeepLastSnapshots
	// ClearKeepLastSnapshots removes the retention setting (sent as null).
	ClearKeepLastSnapshots bool
	CurrentSnapshotID      string
	Region                 string
	// FailoverRegions replaces the list when non-nil; empty clears it.
	FailoverRegions []string
	// NetworkID moves the sandbox into that private network.
	NetworkID string
	// ClearNetworkID takes the sandbox out of its private network (sent
	// as null).
	ClearNetworkID bool
	// Mounts replaces all mounts when non-nil; empty removes them.
	Mounts map[string]Mount
}

// Validate reports the first problem that the API would refuse.
func (p *UpdateParams) Validate() error {
	if p.ClearKeepLastSnapshots && p.KeepLastSnapshots != nil {
		return apierr.Invalid("KeepLastSnapshots", "cannot set and clear at once")
	}
	if p.ClearNetworkID && p.NetworkID != "" {
		return apierr.Invalid("NetworkID", "cannot set and clear at once")
	}
	return validateCommon(p.VCPUs, p.Timeout, p.Ports, p.Tags, nil, p.NetworkPolicy, p.Region,
		p.FailoverRegions, p.SnapshotExpiration, p.KeepLastSnapshots, p.Mounts)
}

func (p *UpdateParams) toWire() *wire.UpdateRequest {
	w := &wire.UpdateRequest{Persistent: p.Persistent, NetworkPolicy: p.NetworkPolicy.toWire(), Tags: p.Tags,
		Ports: p.Ports, CurrentSnapshotID: p.CurrentSnapshotID, Region: p.Region,
		FailoverRegions: p.FailoverRegions, Mounts: mountsToWire(p.Mounts)}
	if p.NetworkID != "" {
		w.NetworkID.Value = &p.NetworkID
	}
	w.NetworkID.Null = p.ClearNetworkID
	if p.VCPUs > 0 {
		w.Resources = &wire.Resources{VCPUs: p.VCPUs, Memory: ptr(p.VCPUs * 2048)}
	}
	if p.Timeout > 0 {
		w.Timeout = ptr(wire.Millis(p.Timeout))
	}
	if p.SnapshotExpiration != nil {
		w.SnapshotExpiration = ptr(wire.Millis(*p.SnapshotExpiration))
	}
	w.KeepLastSnapshots.Value = keepToWire(p.KeepLastSnapshots)
	if p.ClearKeepLastSnapshots {
		w.KeepLastSnapshots = wire.Nullable[wire.KeepLastSnapshots]{Null: true}
	}
	return w
}

// ListParams filter and order List. The zero value lists everything,
// newest first.
type ListParams struct {
	// PageSize is how many sandboxes one request fetches (1–50; 0: 20).
	PageSize int
	// SortBy is "createdAt" (default), "name" or "statusUpdatedAt".
	SortBy string
	// Ascending sorts oldest (or A) first.
	Ascending bool
	// NamePrefix filters by name prefix; it needs SortBy "name".
	NamePrefix string
	// Tag filters by one tag ("key" and value).
	TagKey, TagValue string
	// Status filters by status (running, stopping, stopped).
	Status Status
}

func (p *ListParams) validate() error {
	if p.PageSize < 0 || p.PageSize > 50 {
		return apierr.Invalid("PageSize", "must be 1–50, got %d", p.PageSize)
	}
	switch p.SortBy {
	case "", "createdAt", "name", "statusUpdatedAt":
	default:
		return apierr.Invalid("SortBy", "must be createdAt, name or statusUpdatedAt, got %q", p.SortBy)
	}
	if p.NamePrefix != "" && p.SortBy != "name" {
		return apierr.Invalid("NamePrefix", "needs SortBy \"name\"")
	}
	if (p.TagKey == "") != (p.TagValue == "") {
		return apierr.Invalid("TagKey", "a tag filter needs both a key and a value")
	}
	return nil
}

// PageParams page through sessions and snapshots.
type PageParams struct {
	// SandboxName restricts the list to one sandbox.
	SandboxName string
	// PageSize is how many items one request fetches (1–50; 0: 20).
	PageSize  int
	Ascending bool
}

func (p *PageParams) validate() error {
	if p.PageSize < 0 || p.PageSize > 50 {
		return apierr.Invalid("PageSize", "must be 1–50, got %d", p.PageSize)
	}
	if p.SandboxName != "" {
		if err := ValidateName(p.SandboxName); err != nil {
			return apierr.Invalid("SandboxName", "%s", strings.TrimPrefix(err.Error(), "vercel sandbox: invalid Name: "))
		}
	}
	return nil
}

// SnapshotParams configure a snapshot.
type SnapshotParams struct {
	// Expiration nil means the server default (30 days or the sandbox's
	// setting); 0 means never.
	Expiration *time.Duration
}

// validateSnapshotExpiration refuses an expiration that hosted Vercel
// refuses: it is zero (never) or at least a day.
func validateSnapshotExpiration(field string, d time.Duration) error {
	if d < 0 {
		return apierr.Invalid(field, "negative duration %s", d)
	}
	if d > 0 && d < wire.MinSnapshotExpiration {
		return apierr.Invalid(field, "%s: must be 0 (never) or at least %s", d, wire.MinSnapshotExpiration)
	}
	return nil
}
