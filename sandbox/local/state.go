package local

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// Session statuses (also used for sandbox.status).
const (
	statusRunning      = "running"
	statusStopping     = "stopping"
	statusSnapshotting = "snapshotting"
	statusStopped      = "stopped"
)

// Snapshot statuses.
const (
	snapCreated = "created"
	snapDeleted = "deleted"
	snapFailed  = "failed"
)

// Values the server reports for things it does not model.
const (
	defaultRegion    = "iad1"
	defaultRuntime   = "node24"
	defaultImage     = "vercel/sandbox/universal:latest"
	defaultVCPUs     = 2
	memoryPerVCPU    = 2048
	maxVCPUs         = 32
	defaultTimeoutMs = 300_000
	minTimeoutMs     = 1_000
	defaultSnapTTLms = int64(30 * 24 * time.Hour / time.Millisecond)
)

// Conventions for the records below: every field is guarded by Server.mu
// unless noted. Maps, slices and pointers stored in a record are never
// modified in place; updates replace them, so wire copies may share them.

type sandboxRec struct {
	seq       int64
	name      string
	projectID string
	dir       string // host directory backing the filesystem (immutable)

	persistent         bool
	createdAt          int64
	updatedAt          int64
	statusUpdatedAt    int64
	region             string
	failover           []string
	vcpus              int
	runtime            string
	image              string
	homeCwd            bool // created from a chosen image
	timeout            int64
	policy             *wire.NetworkPolicyResp
	policySet          bool // a client set policy (else it is the default)
	env                map[string]string
	tags               map[string]string
	ports              []int
	interactive        bool // created for terminals: reports interactivePort
	snapshotExpiration *int64
	keepLast           *wire.KeepLastSnapshots
	currentSnapshotID  string
	networkID          string

	// syncedSnapshot is the snapshot whose content dir last matched (taken
	// from it or restored into it). A resume restores currentSnapshotID
	// only when it differs, so the directory otherwise persists.
	syncedSnapshot string

	current  *sessionRec
	deleted  bool
	totalDur int64

	// lc serialises lifecycle changes of this sandbox (stop, snapshot,
	// resume, delete). Lock order: lc before Server.mu.
	lc sync.Mutex
}

type sessionRec struct {
	diskWatched bool // a goroutine measures its disk usage; see watchDisk
	// terminals are the running commands of the session's terminals;
	// watchDisk watches them too.
	terminals map[*runningCommand]struct{}

	seq       int64
	id        string
	sb        *sandboxRec
	projectID string
	cwd       string

	memory           int
	vcpus            int
	region           string
	runtime          string
	timeout          int64
	status           string
	requestedAt      int64
	createdAt        int64
	updatedAt        int64
	startedAt        int64
	requestedStopAt  *int64
	stoppedAt        *int64
	snapshottedAt    *int64
	duration         *int64
	sourceSnapshotID string
	policy           *wire.NetworkPolicyResp
	activeCPU        *int64
	transfer         *wire.NetworkTransfer

	ctx    context.Context // cancelled when the session ends (immutable)
	cancel context.CancelFunc
	timer  *time.Timer // expiry timer, real clock only

	// ops counts commands that have not finished and file operations in
	// flight. Add is only called under Server.mu while status is running;
	// a stop changes the status first and then waits.
	ops sync.WaitGroup

	commands map[string]*commandRec
}

type commandRec struct {
	seq       int64
	id        string
	sess      *sessionRec
	name      string
	args      []string
	cwd       string
	env       map[string]string
	sudo      bool
	timeoutMs *int64
	startedAt int64
	started   time.Time // real time, for durationMs

	proc       Process // nil until Start returned, and again once ended
	exitCode   *int
	durationMs *int64
	endedAt    int64 // ms on the server's clock, once exitCode is set
	signals    []int
	pending    []int // signals asked for before Start returned, to deliver then
	timedOut   bool
	// sessionEnded: the command was still running when its session ended.
	sessionEnded bool

	out  *outputLog    // internally synchronised
	done chan struct{} // closed once exitCode is set
}

type snapshotRec struct {
	seq             int64
	id              string
	sb              *sandboxRec // origin; may be deleted
	sandboxName     string
	sourceSessionID string
	region          string
	dir             string // host copy of the filesystem

	status         string
	sizeBytes      int64
	createdAt      int64
	updatedAt      int64
	expiresAt      *int64
	lastUsedAt     *int64
	creationMethod string
	parentID       string
}

// sandboxWire converts sb to its wire form. Called with s.mu held.
func (s *Server) sandboxWire(sb *sandboxRec) wire.Sandbox {
	cur := sb.current
	w := wire.Sandbox{
		Name:                     sb.name,
		Persistent:               sb.persistent,
		CurrentSessionID:         cur.id,
		Status:                   cur.status,
		CreatedAt:                sb.createdAt,
		UpdatedAt:                sb.updatedAt,
		StatusUpdatedAt:          ptr(sb.statusUpdatedAt),
		Region:                   sb.region,
		FailoverRegions:          sb.failover,
		VCPUs:                    ptr(sb.vcpus),
		Memory:                   ptr(sb.vcpus * memoryPerVCPU),
		Runtime:                  sb.runtime,
		Architecture:             runtime.GOARCH,
		Image:                    pinImage(sb.image),
		Timeout:                  ptr(sb.timeout),
		NetworkPolicy:            sb.policy,
		TotalEgressBytes:         ptr(int64(0)),
		TotalIngressBytes:        ptr(int64(0)),
		TotalActiveCPUDurationMs: ptr(int64(0)),
		TotalDurationMs:          ptr(sb.totalDur),
		CurrentSnapshotID:        sb.currentSnapshotID,
		Cwd:                      cur.cwd,
		Tags:                     sb.tags,
		SnapshotExpiration:       sb.snapshotExpiration,
		KeepLastSnapshots:        sb.keepLast,
		NetworkID:                sb.networkID,
	}
	if cur.status == statusRunning {
		w.ExpiresAt = ptr(cur.startedAt + cur.timeout)
	}
	return w
}

// sessionWire converts sess to its wire form. Called with s.mu held.
func sessionWire(sess *sessionRec) wire.Session {
	return wire.Session{
		ID:                  sess.id,
		Memory:              sess.memory,
		VCPUs:               sess.vcpus,
		Region:              sess.region,
		Timeout:             sess.timeout,
		Status:              sess.status,
		RequestedAt:         sess.requestedAt,
		CreatedAt:           sess.createdAt,
		UpdatedAt:           sess.updatedAt,
		Cwd:                 sess.cwd,
		Runtime:             sess.runtime,
		Architecture:        runtime.GOARCH,
		StartedAt:           ptr(sess.startedAt),
		RequestedStopAt:     sess.requestedStopAt,
		StoppedAt:           sess.stoppedAt,
		SnapshottedAt:       sess.snapshottedAt,
		Duration:            sess.duration,
		SourceSnapshotID:    sess.sourceSnapshotID,
		NetworkPolicy:       sess.policy,
		ActiveCPUDurationMs: sess.activeCPU,
		NetworkTransfer:     sess.transfer,
		ProjectID:           sess.projectID,
		SourceSandboxName:   sess.sb.name,
		InteractivePort:     sess.interactivePort(),
	}
}

// interactivePort returns the session's interactivePort: set when its
// sandbox was created for terminals.
func (sess *sessionRec) interactivePort() *int {
	if !sess.sb.interactive {
		return nil
	}
	return ptr(interactivePort)
}

// commandWire converts c to its wire form. Called with s.mu held.
func commandWire(c *commandRec) wire.Command {
	args := c.args
	if args == nil {
		args = []string{}
	}
	return wire.Command{
		ID:         c.id,
		Name:       c.name,
		Args:       args,
		Cwd:        c.cwd,
		SessionID:  c.sess.id,
		ExitCode:   c.exitCode,
		StartedAt:  c.startedAt,
		DurationMs: c.durationMs,
	}
}

// snapshotWire converts snap to its wire form. Called with s.mu held.
func snapshotWire(snap *snapshotRec) wire.Snapshot {
	return wire.Snapshot{
		ID:              snap.id,
		SourceSessionID: snap.sourceSessionID,
		Architecture:    runtime.GOARCH,
		Region:          snap.region,
		Status:          snap.status,
		SizeBytes:       snap.sizeBytes,
		CreatedAt:       snap.createdAt,
		UpdatedAt:       snap.updatedAt,
		Regions:         []string{snap.region},
		ExpiresAt:       snap.expiresAt,
		LastUsedAt:      snap.lastUsedAt,
		CreationMethod:  snap.creationMethod,
		ParentID:        snap.parentID,
	}
}

// interactivePort is the port hosted Vercel reports as interactivePort for
// a sandbox created with "__interactive": true, the port of its terminal
// server; it also gets a route. The official CLI refuses a sandbox it
// creates without one.
const interactivePort = 8443

// routes returns the routes of sb: one per exposed port, and one for the
// terminal's port when sb was created for terminals. Called with s.mu held.
func (sb *sandboxRec) routes() []wire.Route {
	ports := sb.ports
	if sb.interactive && !slices.Contains(ports, interactivePort) {
		ports = append(slices.Clone(ports), interactivePort)
	}
	return routesFor(sb.name, ports)
}

// routesFor returns one route per port; never nil.
func routesFor(name string, ports []int) []wire.Route {
	routes := make([]wire.Route, 0, len(ports))
	for _, p := range ports {
		sub := subdomain(name, p)
		routes = append(routes, wire.Route{URL: "https://" + sub + ".vercel.run", Subdomain: sub, Port: p})
	}
	return routes
}

// subdomain lower-cases name and turns every run of characters outside
// [a-z0-9] into one dash, then appends the port.
func subdomain(name string, port int) string {
	b := make([]byte, 0, len(name)+6)
	dash := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b = append(b, c)
			dash = false
			continue
		}
		if !dash {
			b = append(b, '-')
			dash = true
		}
	}
	return string(b) + "-" + itoa64(int64(port))
}

// mergeEnv returns base overlaid with over.
func mergeEnv(base, over map[string]string) map[string]string {
	env := make(map[string]string, len(base)+len(over))
	maps.Copy(env, base)
	maps.Copy(env, over)
	return env
}

// cloneCommandInfo builds the inspection view of c. Called with s.mu held.
func commandInfo(c *commandRec) CommandInfo {
	total, frames, bytes := c.out.stats()
	return CommandInfo{
		Command:       commandState(commandWire(c)),
		SandboxName:   c.sess.sb.name,
		Env:           maps.Clone(c.env),
		Sudo:          c.sudo,
		Signals:       slices.Clone(c.signals),
		TimedOut:      c.timedOut,
		OutputBytes:   total,
		DroppedFrames: frames,
		DroppedBytes:  bytes,
	}
}
