package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
)

// DefaultHealthTimeout bounds a health probe.
const DefaultHealthTimeout = 5 * time.Second

// HealthOption configures a health probe.
type HealthOption func(*healthConfig)

type healthConfig struct {
	timeout time.Duration
	cmd     *command.Cmd
}

// HealthTimeout bounds the whole probe instead of DefaultHealthTimeout.
func HealthTimeout(d time.Duration) HealthOption { return func(c *healthConfig) { c.timeout = d } }

// HealthCommand makes the probe run cmd instead of "true"; nil keeps
// "true".
func HealthCommand(cmd *command.Cmd) HealthOption { return func(c *healthConfig) { c.cmd = cmd } }

// HealthState is the verdict of a probe.
type HealthState string

// Probe verdicts.
const (
	// Healthy: the session runs and answered the probe command.
	Healthy HealthState = "healthy"
	// Unhealthy: the session is there but did not answer in time, or the
	// probe failed for another reason; it may recover.
	Unhealthy HealthState = "unhealthy"
	// Stopped: the session has stopped (410, or a stopped status); the
	// sandbox may be resumed.
	Stopped HealthState = "stopped"
	// NotFound: no such sandbox or session.
	NotFound HealthState = "not_found"
)

// Health is the result of a probe.
type Health struct {
	State HealthState
	// Latency is how long the probe took.
	Latency time.Duration
	// Reason explains a state other than Healthy.
	Reason string
	// ShouldRecreate is true when the sandbox cannot serve as it is: it
	// stopped, is gone, or did not answer. A caller that keeps sandboxes
	// alive recreates (or resumes) it.
	ShouldRecreate bool
	// SessionID is the session probed, when known.
	SessionID string
	// Err is the error behind an unhealthy verdict, if any.
	Err error
}

// Health probes the current session without resuming it: it runs a
// trivial command under a short deadline and never blocks past it. It
// returns a verdict, not an error; only invalid options give an error.
func (s *Sandbox) Health(ctx context.Context, opts ...HealthOption) (Health, error) {
	return s.c.probe(ctx, s.SessionID(), s.name, opts)
}

// Health is Sandbox.Health for a sandbox known only by name or session id,
// such as one stored by another process. Give one of name and sessionID;
// with a name, the sandbox's current session is probed. It never resumes.
func (c *Client) Health(ctx context.Context, name, sessionID string, opts ...HealthOption) (Health, error) {
	if (name == "") == (sessionID == "") {
		return Health{}, &InputError{Field: "name", Reason: "give exactly one of a sandbox name and a session id"}
	}
	if name != "" {
		if err := ValidateName(name); err != nil {
			return Health{}, err
		}
	} else if err := validateID("sessionID", sessionID); err != nil {
		return Health{}, err
	}
	return c.probe(ctx, sessionID, name, opts)
}

func (c *Client) probe(ctx context.Context, sid, name string, opts []HealthOption) (Health, error) {
	var o healthConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.timeout < 0 {
		return Health{}, &InputError{Field: "HealthTimeout", Reason: "negative duration"}
	}
	if o.timeout == 0 {
		o.timeout = DefaultHealthTimeout
	}
	cmd := o.cmd
	if cmd == nil {
		cmd = &command.Cmd{Name: "true"}
	}
	if err := cmd.Validate(); err != nil {
		return Health{}, err
	}
	began := time.Now()
	pctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	h := c.probeOnce(pctx, sid, name, cmd)
	h.Latency = time.Since(began)
	if h.State == Unhealthy && ctx.Err() == nil && pctx.Err() != nil {
		h.Reason = fmt.Sprintf("no answer within %s", o.timeout)
	}
	h.ShouldRecreate = h.State != Healthy
	return h, nil
}

func (c *Client) probeOnce(ctx context.Context, sid, name string, cmd *command.Cmd) Health {
	if name != "" {
		out, err := c.get(ctx, name, false)
		if err != nil {
			return verdict(err, "")
		}
		sid = out.Session.ID
		if st := Status(out.Session.Status); st.Terminal() {
			return Health{State: Stopped, SessionID: sid, Reason: "session " + string(st)}
		} else if st != StatusRunning {
			return Health{State: Unhealthy, SessionID: sid, Reason: "session " + string(st)}
		}
	}
	// A probe command is harmless to repeat, but it is sent once like any
	// command: a probe that cannot tell is unhealthy.
	// The probe runs on the session found, never resuming it.
	cn := &conn.Conn{Core: c.core, SandboxName: name, Reattach: c.reattach,
		WithSession: func(_ context.Context, fn func(string) error) error { return fn(sid) }}
	res, err := command.Run(ctx, cn, cmd)
	if err != nil {
		var ee *command.ExitError
		if errors.As(err, &ee) {
			return Health{State: Unhealthy, SessionID: sid, Reason: fmt.Sprintf("probe command exited with code %d", ee.ExitCode), Err: err}
		}
		return verdict(err, sid)
	}
	_ = res
	return Health{State: Healthy, SessionID: sid}
}

func verdict(err error, sid string) Health {
	switch {
	case errors.Is(err, ErrNotFound):
		return Health{State: NotFound, SessionID: sid, Reason: "not found", Err: err}
	case errors.Is(err, ErrGone):
		return Health{State: Stopped, SessionID: sid, Reason: "session stopped", Err: err}
	case errors.Is(err, ErrStopping):
		return Health{State: Stopped, SessionID: sid, Reason: "session stopping", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return Health{State: Unhealthy, SessionID: sid, Reason: "timed out", Err: err}
	}
	return Health{State: Unhealthy, SessionID: sid, Reason: err.Error(), Err: err}
}
