package sandbox

import (
	"encoding/json"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Status is the state of a session (and of a sandbox's current session).
type Status string

// Session states.
const (
	StatusPending      Status = "pending"
	StatusRunning      Status = "running"
	StatusStopping     Status = "stopping"
	StatusSnapshotting Status = "snapshotting"
	StatusStopped      Status = "stopped"
	StatusFailed       Status = "failed"
	StatusAborted      Status = "aborted"
)

// Terminal reports whether a session in this state can never run again
// (stopped, failed or aborted).
func (s Status) Terminal() bool {
	return s == StatusStopped || s == StatusFailed || s == StatusAborted
}

// Info describes a named sandbox.
type Info struct {
	Name             string
	Persistent       bool
	CurrentSessionID string
	Status           Status
	CreatedAt        time.Time
	UpdatedAt        time.Time
	StatusUpdatedAt  time.Time // zero when not reported
	Region           string
	FailoverRegions  []string
	VCPUs            int // zero when not reported
	MemoryMB         int // zero when not reported
	Runtime          string
	Architecture     string // CPU architecture, such as "amd64", when reported
	Image            string
	Timeout          time.Duration // default session timeout
	NetworkPolicy    *NetworkPolicyStatus
	// Usage over all sessions, when reported.
	TotalEgressBytes  int64
	TotalIngressBytes int64
	TotalActiveCPU    time.Duration
	TotalDuration     time.Duration
	// ExpiresAt is the deadline of the running session, when there is one.
	ExpiresAt          time.Time
	CurrentSnapshotID  string
	Cwd                string
	Tags               map[string]string
	SnapshotExpiration *time.Duration // nil: not set; 0: never expire
	KeepLastSnapshots  *KeepLastSnapshots
	NetworkID          string
	Mounts             map[string]Mount
}

// Mount is a drive mounted into a sandbox.
type Mount struct {
	Drive string
	Mode  string // "read-write" or "snapshot"
}

// KeepLastSnapshots keeps only the newest snapshots of a sandbox.
type KeepLastSnapshots struct {
	Count         int            // 1–10
	Expiration    *time.Duration // nil: default; 0: never
	DeleteEvicted *bool          // nil: the server default (true)
}

// Session is one VM boot of a sandbox.
type Session struct {
	ID               string
	MemoryMB         int
	VCPUs            int
	Region           string
	Timeout          time.Duration // from start; grows with ExtendTimeout
	Status           Status
	RequestedAt      time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Cwd              string // default working directory, absolute
	Runtime          string
	Architecture     string // CPU architecture, such as "amd64", when reported
	StartedAt        time.Time
	RequestedStopAt  time.Time
	StoppedAt        time.Time
	AbortedAt        time.Time
	SnapshottedAt    time.Time
	Duration         time.Duration // wall-clock time, after stop
	SourceSnapshotID string
	// SourceSandboxName is the name of the sandbox the session belongs to,
	// when reported.
	SourceSandboxName string
	InteractivePort   int
	NetworkPolicy     *NetworkPolicyStatus
	// ActiveCPU and NetworkTransfer are reported after a successful stop.
	ActiveCPU       time.Duration
	NetworkTransfer *NetworkTransfer
}

// ExpiresAt returns when the session times out (StartedAt + Timeout), or the
// zero time when it has not started.
func (s Session) ExpiresAt() time.Time {
	if s.StartedAt.IsZero() {
		return time.Time{}
	}
	return s.StartedAt.Add(s.Timeout)
}

// NetworkTransfer is the traffic of a stopped session, in bytes.
type NetworkTransfer struct {
	Ingress int64
	Egress  int64
}

// Route is an exposed port and its public URL.
type Route struct {
	URL       string
	Subdomain string
	Port      int
}

// SnapshotStatus is the state of a snapshot.
type SnapshotStatus string

// Snapshot states.
const (
	SnapshotCreated SnapshotStatus = "created"
	SnapshotDeleted SnapshotStatus = "deleted"
	SnapshotFailed  SnapshotStatus = "failed"
)

// Snapshot is a saved filesystem image.
type Snapshot struct {
	ID              string
	SourceSessionID string
	Architecture    string // CPU architecture, such as "amd64", when reported
	Region          string
	Status          SnapshotStatus
	SizeBytes       int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
	Regions         []string
	ExpiresAt       time.Time // zero: never expires
	LastUsedAt      time.Time
	CreationMethod  string
	ParentID        string
}

// NetworkPolicyStatus is a network policy as the API reports it. Header
// values of injection rules are never returned, only their names.
type NetworkPolicyStatus struct {
	Mode           string // "allow-all", "deny-all" or "custom"
	AllowedDomains []string
	AllowedCIDRs   []string
	DeniedCIDRs    []string
	InjectionRules []InjectionRuleStatus
	ForwardRules   []ForwardRuleStatus
}

// InjectionRuleStatus is a header-injection rule as reported.
type InjectionRuleStatus struct {
	Domain      string
	HeaderNames []string
	Match       json.RawMessage // the rule's match, as sent
}

// ForwardRuleStatus is a forwarding rule as reported.
type ForwardRuleStatus struct {
	Domain     string
	ForwardURL string
	Match      json.RawMessage
}

// StopResult is the final state after a stop.
type StopResult struct {
	Session Session
	// Sandbox is the sandbox after the stop, when the API returned it.
	Sandbox *Info
	// Snapshot is the automatic snapshot of a persistent sandbox, if any.
	Snapshot *Snapshot
	// AlreadyStopped is true when the session had stopped before this call:
	// the API answered 410 Gone, or 200 with a session whose stop was
	// requested before this call reached it (on the server's clock, to the
	// second), or the handle (or, for Client.Stop, the API) already
	// reported the session stopped.
	AlreadyStopped bool
}

func msTimeP(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return wire.Time(*ms)
}

func msDurP(ms *int64) time.Duration {
	if ms == nil {
		return 0
	}
	return wire.Duration(*ms)
}

func intP(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func i64P(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

func infoFromWire(w *wire.Sandbox) Info {
	in := Info{
		Name: w.Name, Persistent: w.Persistent, CurrentSessionID: w.CurrentSessionID,
		Status: Status(w.Status), CreatedAt: wire.Time(w.CreatedAt), UpdatedAt: wire.Time(w.UpdatedAt),
		StatusUpdatedAt: msTimeP(w.StatusUpdatedAt), Region: w.Region, FailoverRegions: w.FailoverRegions,
		VCPUs: intP(w.VCPUs), MemoryMB: intP(w.Memory), Runtime: w.Runtime, Architecture: w.Architecture, Image: w.Image,
		Timeout: msDurP(w.Timeout), NetworkPolicy: policyFromWire(w.NetworkPolicy),
		TotalEgressBytes: i64P(w.TotalEgressBytes), TotalIngressBytes: i64P(w.TotalIngressBytes),
		TotalActiveCPU: msDurP(w.TotalActiveCPUDurationMs), TotalDuration: msDurP(w.TotalDurationMs),
		ExpiresAt: msTimeP(w.ExpiresAt), CurrentSnapshotID: w.CurrentSnapshotID, Cwd: w.Cwd,
		Tags: w.Tags, NetworkID: w.NetworkID,
	}
	if w.SnapshotExpiration != nil {
		in.SnapshotExpiration = ptr(wire.Duration(*w.SnapshotExpiration))
	}
	if k := w.KeepLastSnapshots; k != nil {
		in.KeepLastSnapshots = &KeepLastSnapshots{Count: k.Count, DeleteEvicted: k.DeleteEvicted}
		if k.Expiration != nil {
			in.KeepLastSnapshots.Expiration = ptr(wire.Duration(*k.Expiration))
		}
	}
	if len(w.Mounts) > 0 {
		in.Mounts = make(map[string]Mount, len(w.Mounts))
		for p, m := range w.Mounts {
			mode := m.Mode
			if mode == "read-only" {
				mode = "snapshot"
			}
			if mode == "" {
				mode = "read-write"
			}
			in.Mounts[p] = Mount{Drive: m.Drive, Mode: mode}
		}
	}
	return in
}

func sessionFromWire(w *wire.Session) Session {
	s := Session{
		ID: w.ID, MemoryMB: w.Memory, VCPUs: w.VCPUs, Region: w.Region, Timeout: wire.Duration(w.Timeout),
		Status: Status(w.Status), RequestedAt: wire.Time(w.RequestedAt), CreatedAt: wire.Time(w.CreatedAt),
		UpdatedAt: wire.Time(w.UpdatedAt), Cwd: w.Cwd, Runtime: w.Runtime, Architecture: w.Architecture,
		StartedAt:       msTimeP(w.StartedAt),
		RequestedStopAt: msTimeP(w.RequestedStopAt), StoppedAt: msTimeP(w.StoppedAt),
		AbortedAt: msTimeP(w.AbortedAt), SnapshottedAt: msTimeP(w.SnapshottedAt),
		Duration: msDurP(w.Duration), SourceSnapshotID: w.SourceSnapshotID, SourceSandboxName: w.SourceSandboxName,
		InteractivePort: intP(w.InteractivePort), NetworkPolicy: policyFromWire(w.NetworkPolicy),
		ActiveCPU: msDurP(w.ActiveCPUDurationMs),
	}
	if w.NetworkTransfer != nil {
		s.NetworkTransfer = &NetworkTransfer{Ingress: w.NetworkTransfer.Ingress, Egress: w.NetworkTransfer.Egress}
	}
	return s
}

func routesFromWire(ws []wire.Route) []Route {
	out := make([]Route, len(ws))
	for i, r := range ws {
		out[i] = Route{URL: r.URL, Subdomain: r.Subdomain, Port: r.Port}
	}
	return out
}

func snapshotFromWire(w *wire.Snapshot) Snapshot {
	return Snapshot{
		ID: w.ID, SourceSessionID: w.SourceSessionID, Architecture: w.Architecture, Region: w.Region, Status: SnapshotStatus(w.Status),
		SizeBytes: w.SizeBytes, CreatedAt: wire.Time(w.CreatedAt), UpdatedAt: wire.Time(w.UpdatedAt),
		Regions: w.Regions, ExpiresAt: msTimeP(w.ExpiresAt), LastUsedAt: msTimeP(w.LastUsedAt),
		CreationMethod: w.CreationMethod, ParentID: w.ParentID,
	}
}

func policyFromWire(w *wire.NetworkPolicyResp) *NetworkPolicyStatus {
	if w == nil {
		return nil
	}
	p := &NetworkPolicyStatus{Mode: w.Mode, AllowedDomains: w.AllowedDomains, AllowedCIDRs: w.AllowedCIDRs, DeniedCIDRs: w.DeniedCIDRs}
	for _, r := range w.InjectionRules {
		p.InjectionRules = append(p.InjectionRules, InjectionRuleStatus{Domain: r.Domain, HeaderNames: r.HeaderNames, Match: r.Match})
	}
	for _, r := range w.ForwardRules {
		p.ForwardRules = append(p.ForwardRules, ForwardRuleStatus{Domain: r.Domain, ForwardURL: r.ForwardURL, Match: r.Match})
	}
	return p
}
