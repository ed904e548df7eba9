package local

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// LeakedSandbox describes a sandbox whose session still runs although
// nobody stopped or deleted it.
type LeakedSandbox struct {
	Name      string
	SessionID string    // the running session
	Status    string    // its status: running (or pending)
	CreatedAt time.Time // on the server's clock
	Tags      map[string]string
	// Sessions lists every session of the sandbox, oldest first, as
	// "id (status)".
	Sessions []string
	// CreatedBy names the request that created the sandbox, with its
	// User-Agent, when it can be told: the sandbox was created (or forked)
	// under an explicit name. Empty otherwise.
	CreatedBy string
}

// String renders the leak on one line.
func (l LeakedSandbox) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: session %s %s, sandbox created %s", l.Name, l.SessionID, l.Status, l.CreatedAt.UTC().Format(time.RFC3339Nano))
	if len(l.Sessions) > 1 {
		fmt.Fprintf(&b, " (sessions: %s)", strings.Join(l.Sessions, ", "))
	}
	if len(l.Tags) > 0 {
		keys := make([]string, 0, len(l.Tags))
		for k := range l.Tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		tags := make([]string, len(keys))
		for i, k := range keys {
			tags[i] = k + "=" + l.Tags[k]
		}
		fmt.Fprintf(&b, ", tags %s", strings.Join(tags, ","))
	}
	if l.CreatedBy != "" {
		fmt.Fprintf(&b, ", created by %s", l.CreatedBy)
	} else {
		b.WriteString(", creator unknown (generated name)")
	}
	return b.String()
}

// LeakedSandboxes returns, oldest first, the live sandboxes whose current
// session is still running (or pending): those that were neither stopped,
// deleted, nor ended by their timeout. Sessions due to expire are expired
// first, so an injected clock is honoured.
func (s *Server) LeakedSandboxes() []LeakedSandbox {
	s.expireDue()
	s.mu.Lock()
	var recs []*sandboxRec
	for _, sb := range s.sandboxes {
		if sb.deleted || sb.current == nil {
			continue
		}
		if st := sb.current.status; st == statusRunning || st == "pending" {
			recs = append(recs, sb)
		}
	}
	slices.SortFunc(recs, func(a, b *sandboxRec) int { return int(a.seq - b.seq) })
	out := make([]LeakedSandbox, len(recs))
	for i, sb := range recs {
		l := LeakedSandbox{
			Name:      sb.name,
			SessionID: sb.current.id,
			Status:    sb.current.status,
			CreatedAt: time.UnixMilli(sb.createdAt),
		}
		if len(sb.tags) > 0 {
			l.Tags = make(map[string]string, len(sb.tags))
			for k, v := range sb.tags {
				l.Tags[k] = v
			}
		}
		for _, sess := range s.sessList {
			if sess.sb == sb {
				l.Sessions = append(l.Sessions, sess.id+" ("+sess.status+")")
			}
		}
		out[i] = l
	}
	s.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	creators := s.creators()
	for i := range out {
		out[i].CreatedBy = creators[out[i].Name]
	}
	return out
}

// creators maps sandbox names given explicitly in successful create and
// fork requests to a description of the request.
func (s *Server) creators() map[string]string {
	out := map[string]string{}
	for _, r := range s.Requests() {
		if r.Method != http.MethodPost || r.Status != http.StatusOK || len(r.Body) == 0 {
			continue
		}
		p := strings.TrimPrefix(r.Path, "/api")
		isCreate := p == "/v2/sandboxes" || p == "/v3/sandboxes" ||
			strings.HasPrefix(p, "/v2/sandboxes/") && strings.HasSuffix(p, "/fork")
		if !isCreate {
			continue
		}
		var body struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r.Body, &body) != nil || body.Name == "" {
			continue
		}
		desc := fmt.Sprintf("POST %s at %s", r.Path, r.Time.UTC().Format(time.RFC3339Nano))
		if ua := r.Header.Get("User-Agent"); ua != "" {
			desc += fmt.Sprintf(" (User-Agent %q)", ua)
		}
		// A name can be reused after a delete; the latest creation wins.
		out[body.Name] = desc
	}
	return out
}

// LiveGoroutines reports how much background work the server has under
// way: one goroutine for each command that has not finished (it watches
// the process), one for each session being stopped because its timeout
// passed, and one for each request being served. After Close it is 0:
// Close returns only once every goroutine the server started has ended.
func (s *Server) LiveGoroutines() int {
	s.inflight.mu.Lock()
	n := s.inflight.n
	s.inflight.mu.Unlock()
	return n + int(s.wg.n.Load())
}

// liveGroup is a sync.WaitGroup that also counts what it waits for.
type liveGroup struct {
	wg sync.WaitGroup
	n  atomic.Int64
}

// Add adds delta to the count of goroutines the group waits for.
func (g *liveGroup) Add(delta int) {
	g.n.Add(int64(delta))
	g.wg.Add(delta)
}

// Done marks one goroutine as ended.
func (g *liveGroup) Done() {
	g.n.Add(-1)
	g.wg.Done()
}

// Go runs f in a goroutine counted by the group, as sync.WaitGroup.Go does.
func (g *liveGroup) Go(f func()) {
	g.Add(1)
	go func() {
		defer g.Done()
		f()
	}()
}

// Wait blocks until every goroutine of the group has ended.
func (g *liveGroup) Wait() { g.wg.Wait() }
