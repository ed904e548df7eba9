// Package wire holds the JSON shapes of the Vercel Sandbox REST API exactly as
// they travel on the wire. Timestamps and durations are integer milliseconds.
// Optional fields are pointers or omitempty so that absent values are omitted,
// never sent as null. The public packages convert these to idiomatic Go types.
package wire

import (
	"encoding/json"
	"time"
)

// Sandbox is the named, long-lived sandbox object.
type Sandbox struct {
	Name                     string             `json:"name"`
	Persistent               bool               `json:"persistent"`
	CurrentSessionID         string             `json:"currentSessionId"`
	Status                   string             `json:"status"`
	CreatedAt                int64              `json:"createdAt"`
	UpdatedAt                int64              `json:"updatedAt"`
	StatusUpdatedAt          *int64             `json:"statusUpdatedAt,omitempty"`
	Region                   string             `json:"region,omitempty"`
	FailoverRegions          []string           `json:"failoverRegions,omitempty"`
	VCPUs                    *int               `json:"vcpus,omitempty"`
	Memory                   *int               `json:"memory,omitempty"`
	Runtime                  string             `json:"runtime,omitempty"`
	Architecture             string             `json:"architecture,omitempty"`
	Image                    string             `json:"image,omitempty"`
	Timeout                  *int64             `json:"timeout,omitempty"`
	NetworkPolicy            *NetworkPolicyResp `json:"networkPolicy,omitempty"`
	TotalEgressBytes         *int64             `json:"totalEgressBytes,omitempty"`
	TotalIngressBytes        *int64             `json:"totalIngressBytes,omitempty"`
	TotalActiveCPUDurationMs *int64             `json:"totalActiveCpuDurationMs,omitempty"`
	TotalDurationMs          *int64             `json:"totalDurationMs,omitempty"`
	ExpiresAt                *int64             `json:"expiresAt,omitempty"`
	CurrentSnapshotID        string             `json:"currentSnapshotId,omitempty"`
	Cwd                      string             `json:"cwd,omitempty"`
	Tags                     map[string]string  `json:"tags,omitempty"`
	SnapshotExpiration       *int64             `json:"snapshotExpiration,omitempty"`
	KeepLastSnapshots        *KeepLastSnapshots `json:"keepLastSnapshots,omitempty"`
	NetworkID                string             `json:"networkId,omitempty"`
	Mounts                   map[string]Mount   `json:"mounts,omitempty"`
}

// Mount is a drive mounted into a sandbox (SDK 3.5).
type Mount struct {
	Drive string `json:"drive"`
	Mode  string `json:"mode,omitempty"`
}

// KeepLastSnapshots is the snapshot retention setting of a sandbox.
type KeepLastSnapshots struct {
	Count         int    `json:"count"`
	Expiration    *int64 `json:"expiration,omitempty"`
	DeleteEvicted *bool  `json:"deleteEvicted,omitempty"`
}

// Session is one VM boot of a sandbox.
type Session struct {
	ID                  string             `json:"id"`
	Memory              int                `json:"memory"`
	VCPUs               int                `json:"vcpus"`
	Region              string             `json:"region"`
	Timeout             int64              `json:"timeout"`
	Status              string             `json:"status"`
	RequestedAt         int64              `json:"requestedAt"`
	CreatedAt           int64              `json:"createdAt"`
	UpdatedAt           int64              `json:"updatedAt"`
	Cwd                 string             `json:"cwd"`
	Runtime             string             `json:"runtime,omitempty"`
	Architecture        string             `json:"architecture,omitempty"`
	StartedAt           *int64             `json:"startedAt,omitempty"`
	RequestedStopAt     *int64             `json:"requestedStopAt,omitempty"`
	StoppedAt           *int64             `json:"stoppedAt,omitempty"`
	AbortedAt           *int64             `json:"abortedAt,omitempty"`
	SnapshottedAt       *int64             `json:"snapshottedAt,omitempty"`
	Duration            *int64             `json:"duration,omitempty"`
	SourceSnapshotID    string             `json:"sourceSnapshotId,omitempty"`
	InteractivePort     *int               `json:"interactivePort,omitempty"`
	NetworkPolicy       *NetworkPolicyResp `json:"networkPolicy,omitempty"`
	ActiveCPUDurationMs *int64             `json:"activeCpuDurationMs,omitempty"`
	NetworkTransfer     *NetworkTransfer   `json:"networkTransfer,omitempty"`
	ProjectID           string             `json:"projectId,omitempty"`
	SourceSandboxName   string             `json:"sourceSandboxName,omitempty"`
}

// NetworkTransfer is the usage of one session after it stopped.
type NetworkTransfer struct {
	Ingress int64 `json:"ingress"`
	Egress  int64 `json:"egress"`
}

// Route is one exposed port.
type Route struct {
	URL       string `json:"url"`
	Subdomain string `json:"subdomain"`
	Port      int    `json:"port"`
}

// Command is one process started in a session. ExitCode is always present
// on the wire: null while the command runs.
type Command struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Args       []string `json:"args"`
	Cwd        string   `json:"cwd"`
	SessionID  string   `json:"sessionId"`
	ExitCode   *int     `json:"exitCode"`
	StartedAt  int64    `json:"startedAt"`
	DurationMs *int64   `json:"durationMs,omitempty"`
}

// Snapshot is a saved filesystem image.
type Snapshot struct {
	ID              string   `json:"id"`
	SourceSessionID string   `json:"sourceSessionId"`
	Architecture    string   `json:"architecture,omitempty"`
	Region          string   `json:"region"`
	Status          string   `json:"status"`
	SizeBytes       int64    `json:"sizeBytes"`
	CreatedAt       int64    `json:"createdAt"`
	UpdatedAt       int64    `json:"updatedAt"`
	Regions         []string `json:"regions,omitempty"`
	ExpiresAt       *int64   `json:"expiresAt,omitempty"`
	LastUsedAt      *int64   `json:"lastUsedAt,omitempty"`
	CreationMethod  string   `json:"creationMethod,omitempty"`
	ParentID        string   `json:"parentId,omitempty"`
}

// Pagination ends a list page. Next is always present: null on the last page.
type Pagination struct {
	Count int     `json:"count"`
	Next  *string `json:"next"`
}

// NetworkPolicyResp is the response form of a network policy.
type NetworkPolicyResp struct {
	Mode           string          `json:"mode"`
	AllowedDomains []string        `json:"allowedDomains,omitempty"`
	AllowedCIDRs   []string        `json:"allowedCIDRs,omitempty"`
	DeniedCIDRs    []string        `json:"deniedCIDRs,omitempty"`
	InjectionRules []InjectionRule `json:"injectionRules,omitempty"`
	ForwardRules   []ForwardRule   `json:"forwardRules,omitempty"`
}

// InjectionRule is a header-injection rule in the response form.
type InjectionRule struct {
	Domain      string          `json:"domain"`
	HeaderNames []string        `json:"headerNames,omitempty"`
	Match       json.RawMessage `json:"match,omitempty"`
}

// ForwardRule is a forwarding rule in the response form.
type ForwardRule struct {
	Domain     string          `json:"domain"`
	ForwardURL string          `json:"forwardURL"`
	Match      json.RawMessage `json:"match,omitempty"`
}

// Source is the origin of a new sandbox's filesystem.
type Source struct {
	Type       string `json:"type"`
	URL        string `json:"url,omitempty"`
	Depth      *int   `json:"depth,omitempty"`
	Revision   string `json:"revision,omitempty"`
	Username   string `json:"username,omitempty"`
	Password   string `json:"password,omitempty"`
	SnapshotID string `json:"snapshotId,omitempty"`
}

// Resources is the resources object of create, fork and update.
type Resources struct {
	VCPUs  int  `json:"vcpus"`
	Memory *int `json:"memory,omitempty"`
}

// CreateRequest is the body of POST /v2|v3/sandboxes. NetworkPolicy is a
// NetworkPolicy, encoded: the local backend decodes it itself, so that it
// can refuse a malformed one as the API does.
type CreateRequest struct {
	ProjectID          string             `json:"projectId,omitempty"`
	Name               string             `json:"name,omitempty"`
	Ports              []int              `json:"ports"`
	Source             *Source            `json:"source,omitempty"`
	Timeout            *int64             `json:"timeout,omitempty"`
	Resources          *Resources         `json:"resources,omitempty"`
	Runtime            string             `json:"runtime,omitempty"`
	Image              string             `json:"image,omitempty"`
	Persistent         *bool              `json:"persistent,omitempty"`
	NetworkPolicy      json.RawMessage    `json:"networkPolicy,omitempty"`
	Env                map[string]string  `json:"env,omitempty"`
	Tags               map[string]string  `json:"tags,omitempty"`
	SnapshotExpiration *int64             `json:"snapshotExpiration,omitempty"`
	KeepLastSnapshots  *KeepLastSnapshots `json:"keepLastSnapshots,omitempty"`
	Region             string             `json:"region,omitempty"`
	FailoverRegions    []string           `json:"failoverRegions,omitempty"`
	NetworkID          string             `json:"networkId,omitempty"`
	Mounts             map[string]Mount   `json:"mounts,omitempty"`
}

// ForkRequest is the body of POST …/fork. Only what overrides the source
// is sent; a non-nil empty list or map is sent (it clears the source's).
// Fields are declared in the order of their JSON names.
type ForkRequest struct {
	Env                map[string]string  `json:"env,omitzero"`
	FailoverRegions    []string           `json:"failoverRegions,omitzero"`
	Image              string             `json:"image,omitempty"`
	KeepLastSnapshots  *KeepLastSnapshots `json:"keepLastSnapshots,omitempty"`
	Name               string             `json:"name,omitempty"`
	NetworkID          string             `json:"networkId,omitempty"`
	NetworkPolicy      *NetworkPolicy     `json:"networkPolicy,omitempty"`
	Persistent         *bool              `json:"persistent,omitempty"`
	Ports              []int              `json:"ports,omitzero"`
	Region             string             `json:"region,omitempty"`
	Resources          *Resources         `json:"resources,omitempty"`
	SnapshotExpiration *int64             `json:"snapshotExpiration,omitempty"`
	Tags               map[string]string  `json:"tags,omitzero"`
	Timeout            *int64             `json:"timeout,omitempty"`
}

// UpdateRequest is the body of PATCH /v2/sandboxes/{name}. Only what
// changes is sent; a non-nil empty list or map is sent (it clears the
// setting). Fields are declared in the order of their JSON names.
type UpdateRequest struct {
	CurrentSnapshotID  string                      `json:"currentSnapshotId,omitempty"`
	FailoverRegions    []string                    `json:"failoverRegions,omitzero"`
	KeepLastSnapshots  Nullable[KeepLastSnapshots] `json:"keepLastSnapshots,omitzero"`
	Mounts             map[string]Mount            `json:"mounts,omitzero"`
	NetworkID          Nullable[string]            `json:"networkId,omitzero"`
	NetworkPolicy      *NetworkPolicy              `json:"networkPolicy,omitempty"`
	Persistent         *bool                       `json:"persistent,omitempty"`
	Ports              []int                       `json:"ports,omitzero"`
	Region             string                      `json:"region,omitempty"`
	Resources          *Resources                  `json:"resources,omitempty"`
	SnapshotExpiration *int64                      `json:"snapshotExpiration,omitempty"`
	Tags               map[string]string           `json:"tags,omitzero"`
	Timeout            *int64                      `json:"timeout,omitempty"`
}

// Nullable is a field sent as a value, sent as null (Null set), or
// omitted (the zero Nullable, with the omitzero option).
type Nullable[T any] struct {
	Value *T
	Null  bool
}

// IsZero reports a field to omit.
func (n Nullable[T]) IsZero() bool { return n.Value == nil && !n.Null }

// MarshalJSON encodes the value, or null.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.Value == nil {
		return []byte("null"), nil
	}
	return json.Marshal(n.Value)
}

// SandboxResponse answers create, get, fork and resume.
type SandboxResponse struct {
	Sandbox Sandbox `json:"sandbox"`
	Session Session `json:"session"`
	Routes  []Route `json:"routes"`
	Resumed bool    `json:"resumed,omitempty"`
}

// SandboxOnlyResponse answers update and delete.
type SandboxOnlyResponse struct {
	Sandbox Sandbox `json:"sandbox"`
	Routes  []Route `json:"routes,omitempty"`
}

// SessionResponse answers get session, extend-timeout and network-policy.
type SessionResponse struct {
	Session Session `json:"session"`
	Routes  []Route `json:"routes,omitempty"`
}

// StopResponse answers a session stop.
type StopResponse struct {
	Session  Session   `json:"session"`
	Sandbox  *Sandbox  `json:"sandbox,omitempty"`
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// SnapshotResponse answers snapshot get, delete and create.
type SnapshotResponse struct {
	Snapshot Snapshot `json:"snapshot"`
	Session  *Session `json:"session,omitempty"`
}

// ListSandboxesResponse is one page of sandboxes.
type ListSandboxesResponse struct {
	Sandboxes  []Sandbox  `json:"sandboxes"`
	Pagination Pagination `json:"pagination"`
}

// ListSessionsResponse is one page of sessions.
type ListSessionsResponse struct {
	Sessions   []Session  `json:"sessions"`
	Pagination Pagination `json:"pagination"`
}

// ListSnapshotsResponse is one page of snapshots.
type ListSnapshotsResponse struct {
	Snapshots  []Snapshot `json:"snapshots"`
	Pagination Pagination `json:"pagination"`
}

// ListCommandsResponse lists the commands of a session (GET …/cmd). The
// answer has no pagination as far as is known; a Pagination, if one comes,
// is followed.
type ListCommandsResponse struct {
	Commands   []Command   `json:"commands"`
	Pagination *Pagination `json:"pagination,omitempty"`
}

// CommandRequest is the body of POST …/cmd.
type CommandRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Wait    bool              `json:"wait,omitempty"`
	Logs    bool              `json:"logs,omitempty"`
	Timeout *int64            `json:"timeout,omitempty"`
}

// CommandResponse wraps a command.
type CommandResponse struct {
	Command Command `json:"command"`
}

// KillRequest is the body of the kill call.
type KillRequest struct {
	Signal int `json:"signal"`
}

// ExtendRequest is the body of extend-timeout.
type ExtendRequest struct {
	Duration int64 `json:"duration"`
}

// SnapshotRequest is the body of a snapshot create when an expiration is given.
type SnapshotRequest struct {
	Expiration *int64 `json:"expiration,omitempty"`
}

// PathRequest is the body of fs/read and fs/mkdir.
type PathRequest struct {
	Path string `json:"path"`
	Cwd  string `json:"cwd,omitempty"`
	// Recursive makes fs/mkdir create missing parents (hosted Vercel
	// accepts it; the official SDK does not send it).
	Recursive bool `json:"recursive,omitempty"`
}

// Frame is one NDJSON line of a command stream: either a command line or a
// log line. Data is raw because error frames carry an object.
type Frame struct {
	Command *Command        `json:"command,omitempty"`
	Stream  string          `json:"stream,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// StreamErrorData is the data of a {"stream":"error"} frame.
type StreamErrorData struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorBody is the error envelope of every non-2xx JSON answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of the error envelope.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Content types the API uses.
const (
	ContentJSON   = "application/json"
	ContentNDJSON = "application/x-ndjson"
	ContentGzip   = "application/gzip"
	ContentOctet  = "application/octet-stream"
)

// MaxEnvPayload is the largest env object, as JSON, that hosted Vercel
// accepts in a create or a command ("400 env payload too large" beyond).
const MaxEnvPayload = 4096

// EnvPayloadSize returns the size of env as the JSON object sent.
func EnvPayloadSize(env map[string]string) int {
	b, _ := json.Marshal(env)
	return len(b)
}

// MinSnapshotExpiration is the shortest snapshot expiration hosted Vercel
// accepts; zero (never) is allowed too.
const MinSnapshotExpiration = 24 * time.Hour
