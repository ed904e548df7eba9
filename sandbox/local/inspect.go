package local

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The inspection methods (Sandboxes, Sessions, Snapshots, Commands) report
// the server's state in these types: times as time.Time (zero when not
// set), durations as time.Duration. They share no memory with the server.

// SandboxState is a sandbox as the server holds it.
type SandboxState struct {
	Name              string
	Status            string // of the current session: running, stopping, stopped, ...
	CurrentSessionID  string
	CurrentSnapshotID string
	Persistent        bool
	Region            string
	VCPUs             int
	Runtime           string
	Image             string
	Timeout           time.Duration     // of each new session
	NetworkPolicy     string            // mode: allow-all, deny-all or custom
	Tags              map[string]string // nil when none
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// SessionState is a session (one boot of a sandbox) as the server holds it.
type SessionState struct {
	ID               string
	SandboxName      string
	Status           string // pending, running, stopping, snapshotting, stopped, ...
	Region           string
	Runtime          string
	VCPUs            int
	MemoryMB         int
	Cwd              string
	Timeout          time.Duration
	NetworkPolicy    string // mode, when one was set
	SourceSnapshotID string
	CreatedAt        time.Time
	StartedAt        time.Time
	StoppedAt        time.Time
}

// SnapshotState is a snapshot as the server holds it.
type SnapshotState struct {
	ID              string
	SourceSessionID string
	ParentID        string
	Status          string // created, deleted, ...
	Region          string
	SizeBytes       int64
	CreatedAt       time.Time
	ExpiresAt       time.Time
}

// CommandState is a command as the server holds it.
type CommandState struct {
	ID        string
	SessionID string
	Name      string
	Args      []string
	Cwd       string
	ExitCode  *int // nil while it runs
	StartedAt time.Time
	Duration  time.Duration // once it has ended
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func msTimePtr(ms *int64) time.Time {
	if ms == nil {
		return time.Time{}
	}
	return msTime(*ms)
}

func msDuration(ms *int64) time.Duration {
	if ms == nil {
		return 0
	}
	return time.Duration(*ms) * time.Millisecond
}

func policyMode(p *wire.NetworkPolicyResp) string {
	if p == nil {
		return ""
	}
	return p.Mode
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sandboxState(w wire.Sandbox) SandboxState {
	return SandboxState{
		Name: w.Name, Status: w.Status, CurrentSessionID: w.CurrentSessionID,
		CurrentSnapshotID: w.CurrentSnapshotID, Persistent: w.Persistent, Region: w.Region,
		VCPUs: deref(w.VCPUs), Runtime: w.Runtime, Image: w.Image, Timeout: msDuration(w.Timeout),
		NetworkPolicy: policyMode(w.NetworkPolicy), Tags: maps.Clone(w.Tags),
		CreatedAt: msTime(w.CreatedAt), UpdatedAt: msTime(w.UpdatedAt),
	}
}

func sessionState(w wire.Session, sandboxName string) SessionState {
	return SessionState{
		ID: w.ID, SandboxName: sandboxName, Status: w.Status, Region: w.Region,
		Runtime: w.Runtime, VCPUs: w.VCPUs, MemoryMB: w.Memory, Cwd: w.Cwd,
		Timeout: msDuration(&w.Timeout), NetworkPolicy: policyMode(w.NetworkPolicy),
		SourceSnapshotID: w.SourceSnapshotID, CreatedAt: msTime(w.CreatedAt),
		StartedAt: msTimePtr(w.StartedAt), StoppedAt: msTimePtr(w.StoppedAt),
	}
}

func snapshotState(w wire.Snapshot) SnapshotState {
	return SnapshotState{
		ID: w.ID, SourceSessionID: w.SourceSessionID, ParentID: w.ParentID, Status: w.Status,
		Region: w.Region, SizeBytes: w.SizeBytes, CreatedAt: msTime(w.CreatedAt),
		ExpiresAt: msTimePtr(w.ExpiresAt),
	}
}

func commandState(w wire.Command) CommandState {
	st := CommandState{
		ID: w.ID, SessionID: w.SessionID, Name: w.Name, Args: slices.Clone(w.Args), Cwd: w.Cwd,
		StartedAt: msTime(w.StartedAt), Duration: msDuration(w.DurationMs),
	}
	if w.ExitCode != nil {
		code := *w.ExitCode
		st.ExitCode = &code
	}
	return st
}

// CommandInfo is what the server knows about one command, for tests.
type CommandInfo struct {
	Command       CommandState      // the command itself
	SandboxName   string            // sandbox it ran in
	Env           map[string]string // environment given to the executor
	Sudo          bool              // whether it was asked to run as root
	Signals       []int             // signals sent through kill and timeouts
	TimedOut      bool              // killed by its per-command timeout
	OutputBytes   int64             // output produced, in bytes
	DroppedFrames int64             // output frames evicted by WithOutputLimit or WithOutputBudget
	DroppedBytes  int64             // output bytes evicted by WithOutputLimit or WithOutputBudget
}

// Sandboxes returns the live sandboxes, oldest first.
func (s *Server) Sandboxes() []SandboxState {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SandboxState
	seen := map[*sandboxRec]bool{}
	for _, sess := range s.sessList {
		sb := sess.sb
		if sb.deleted || seen[sb] {
			continue
		}
		seen[sb] = true
		out = append(out, sandboxState(s.sandboxWire(sb)))
	}
	return out
}

// Sandbox returns the live sandbox called name.
func (s *Server) Sandbox(name string) (SandboxState, bool) {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.sandboxes[name]
	if sb == nil {
		return SandboxState{}, false
	}
	return sandboxState(s.sandboxWire(sb)), true
}

// Sessions returns every session ever started, oldest first, including
// those of deleted sandboxes.
func (s *Server) Sessions() []SessionState {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionState, len(s.sessList))
	for i, sess := range s.sessList {
		out[i] = sessionState(sessionWire(sess), sess.sb.name)
	}
	return out
}

// Session returns the session with the given id.
func (s *Server) Session(id string) (SessionState, bool) {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return SessionState{}, false
	}
	return sessionState(sessionWire(sess), sess.sb.name), true
}

// Snapshots returns every snapshot ever taken, oldest first, deleted ones
// included (with status deleted).
func (s *Server) Snapshots() []SnapshotState {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SnapshotState, len(s.snapList))
	for i, snap := range s.snapList {
		out[i] = snapshotState(snapshotWire(snap))
	}
	return out
}

// Commands returns every command started, in start order. Each API call
// that started a command appears exactly once, so a test can prove that a
// command did not run twice.
func (s *Server) Commands() []CommandInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CommandInfo, len(s.commands))
	for i, c := range s.commands {
		out[i] = commandInfo(c)
	}
	return out
}

// CommandCount is the number of commands started so far.
func (s *Server) CommandCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.commands)
}

// Output returns the retained stdout and stderr of a command.
func (s *Server) Output(commandID string) (stdout, stderr string, err error) {
	if commandID == "" {
		return "", "", apierr.Invalid("commandID", "empty")
	}
	s.mu.Lock()
	var found *commandRec
	for _, c := range s.commands {
		if c.id == commandID {
			found = c
			break
		}
	}
	s.mu.Unlock()
	if found == nil {
		return "", "", fmt.Errorf("local: no command %q", commandID)
	}
	return found.out.text(streamStdout), found.out.text(streamStderr), nil
}

// MemoryStats is what the server holds in memory for replay, as Memory
// reports it. Output is counted as WithOutputLimit counts it: the bytes
// written plus 64 bytes per write.
type MemoryStats struct {
	OutputBytes     int64 // command output kept for replay now
	OutputBudget    int64 // the most it may keep (WithOutputBudget)
	OutputLimit     int64 // the most one command may keep (WithOutputLimit)
	EvictedBytes    int64 // output evicted by either budget since the start
	ReleasedBytes   int64 // output released with stopped sessions
	Commands        int   // commands recorded (see Commands)
	Requests        int   // requests kept (see Requests and WithRequestHistory)
	DroppedRequests int64 // requests no longer kept, the oldest first
	OutputCommands  int   // commands whose output is kept (running ones included)
}

// Memory reports what the server holds in memory for replay. When no
// write is in progress, OutputBytes is at most OutputBudget, but for the
// output of a stopped session that a stream still reads.
func (s *Server) Memory() MemoryStats {
	s.mu.Lock()
	commands := len(s.commands)
	s.mu.Unlock()
	kept, dropped := s.reqs.counts()
	s.out.mu.Lock()
	retained := s.out.logs.Len()
	s.out.mu.Unlock()
	return MemoryStats{
		OutputBytes:     s.out.used.Load(),
		OutputBudget:    s.out.budget,
		OutputLimit:     s.cfg.outputLimit,
		EvictedBytes:    s.out.evicted.Load(),
		ReleasedBytes:   s.out.released.Load(),
		Commands:        commands,
		Requests:        kept,
		DroppedRequests: dropped,
		OutputCommands:  retained,
	}
}

// Requests returns the requests received so far, in arrival order, with
// secrets redacted: every one, or the most recent WithRequestHistory of
// them (10,000 by default). It is safe to call while requests are in
// flight.
func (s *Server) Requests() []Request {
	return s.reqs.snapshot()
}
