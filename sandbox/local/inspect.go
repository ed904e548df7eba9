package local

import (
	"encoding/json"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The inspection methods return the server's state with the fields of
// the API's JSON (timestamps and durations in milliseconds, optional
// fields as pointers), as types of their own.
type (
	// SandboxState is a sandbox as the API reports it.
	SandboxState wire.Sandbox
	// SessionState is a session as the API reports it.
	SessionState wire.Session
	// SnapshotState is a snapshot as the API reports it.
	SnapshotState wire.Snapshot
	// CommandState is a command as the API reports it.
	CommandState wire.Command
)

// CommandInfo is what the server knows about one command, for tests.
type CommandInfo struct {
	Command       CommandState      // as the API reports it
	SandboxName   string            // sandbox it ran in
	Env           map[string]string // environment given to the executor
	Sudo          bool              // whether it was asked to run as root
	Signals       []int             // signals sent through kill and timeouts
	TimedOut      bool              // killed by its per-command timeout
	OutputBytes   int64             // output produced, in bytes
	DroppedFrames int64             // output frames dropped by the retention limit
	DroppedBytes  int64             // output bytes dropped by the retention limit
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
		out = append(out, SandboxState(deepCopy(s.sandboxWire(sb))))
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
	return SandboxState(deepCopy(s.sandboxWire(sb))), true
}

// Sessions returns every session ever started, oldest first, including
// those of deleted sandboxes.
func (s *Server) Sessions() []SessionState {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SessionState, len(s.sessList))
	for i, sess := range s.sessList {
		out[i] = SessionState(deepCopy(sessionWire(sess)))
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
	return SessionState(deepCopy(sessionWire(sess))), true
}

// Snapshots returns every snapshot ever taken, oldest first, deleted ones
// included (with status deleted).
func (s *Server) Snapshots() []SnapshotState {
	s.expireDue()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SnapshotState, len(s.snapList))
	for i, snap := range s.snapList {
		out[i] = SnapshotState(deepCopy(snapshotWire(snap)))
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
		info := commandInfo(c)
		info.Command = deepCopy(info.Command)
		out[i] = info
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

// Requests returns every request received so far, in arrival order, with
// secrets redacted. It is safe to call while requests are in flight.
func (s *Server) Requests() []Request {
	return s.reqs.snapshot()
}

// deepCopy returns a copy of a wire value that shares no memory with the
// server's state, so callers may modify what the inspection methods return.
func deepCopy[T any](v T) T {
	data, err := json.Marshal(v)
	if err != nil {
		panic("local: cannot copy state: " + err.Error())
	}
	var out T
	if err := json.Unmarshal(data, &out); err != nil {
		panic("local: cannot copy state: " + err.Error())
	}
	return out
}
