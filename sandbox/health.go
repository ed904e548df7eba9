package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
)

// DefaultHealthTimeout bounds a health probe.
const DefaultHealthTimeout = 5 * time.Second

// HealthParams configures a health probe. The zero value probes with
// "true" under DefaultHealthTimeout.
type HealthParams struct {
	// Timeout bounds the whole probe; zero means DefaultHealthTimeout.
	Timeout time.Duration
	// Command is the probe command's name and arguments; empty means
	// "true".
	Command []string
}

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
// returns a verdict, not an error; only invalid params give an error.
func (s *Sandbox) Health(ctx context.Context, p HealthParams) (Health, error) {
	return s.c.probe(ctx, s.SessionID(), s.name, p)
}

// Health is Sandbox.Health for a sandbox known only by name, such as one
// stored by another process: the sandbox's current session is probed. It
// never resumes.
func (c *Client) Health(ctx context.Context, name string, p HealthParams) (Health, error) {
	if err := ValidateName(name); err != nil {
		return Health{}, err
	}
	return c.probe(ctx, "", name, p)
}

// SessionHealth is Sandbox.Health for a session known only by its id. It
// never resumes.
func (c *Client) SessionHealth(ctx context.Context, sessionID string, p HealthParams) (Health, error) {
	if err := validateID("sessionID", sessionID); err != nil {
		return Health{}, err
	}
	return c.probe(ctx, sessionID, "", p)
}

func (c *Client) probe(ctx context.Context, sid, name string, p HealthParams) (Health, error) {
	if p.Timeout < 0 {
		return Health{}, &InputError{Field: "HealthParams.Timeout", Reason: "negative duration"}
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = DefaultHealthTimeout
	}
	argv := p.Command
	if len(argv) == 0 {
		argv = []string{"true"}
	}
	// The probe is bounded by its deadline: a probe whose deadline passes
	// is not waited for any longer, nor killed.
	cmd := &command.Cmd{Name: argv[0], Args: argv[1:], DetachOnCancel: true}
	if err := cmd.Validate(); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Field = healthField(ie.Field)
		}
		return Health{}, err
	}
	began := time.Now()
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := c.probeOnce(pctx, sid, name, cmd)
	h.Latency = time.Since(began)
	if h.State == Unhealthy && ctx.Err() == nil && pctx.Err() != nil {
		h.Reason = fmt.Sprintf("no answer within %s", timeout)
	}
	h.ShouldRecreate = h.State != Healthy
	return h, nil
}

// healthField names the field of HealthParams behind the field of a Cmd
// that Validate refused.
func healthField(f string) string {
	var i int
	if _, err := fmt.Sscanf(f, "Cmd.Args[%d]", &i); err == nil {
		return fmt.Sprintf("HealthParams.Command[%d]", i+1)
	}
	return strings.Replace(f, "Cmd.Name", "HealthParams.Command[0]", 1)
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
	if _, err := bindCmd(cmd, cn, nil).Run(ctx); err != nil {
		var ee *command.ExitError
		if errors.As(err, &ee) {
			return Health{State: Unhealthy, SessionID: sid, Reason: fmt.Sprintf("probe command exited with code %d", ee.ExitCode()), Err: err}
		}
		return verdict(err, sid)
	}
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
