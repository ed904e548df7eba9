package workload

import (
	"context"
	"log/slog"
	"time"
)

// Phase names a stage of a workload.
type Phase string

// Phases reported to an Observer.
const (
	PhaseCreate  Phase = "create"
	PhaseSetup   Phase = "setup"
	PhaseExecute Phase = "execute"
	PhaseStop    Phase = "stop"
)

// Usage is the token usage of a model call, when the workload reports it.
type Usage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
}

// Total returns InputTokens + OutputTokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// PhaseEvent describes one phase. PhaseStart receives it with Start set;
// PhaseEnd receives it complete.
type PhaseEvent struct {
	Phase Phase
	// Step names the setup step or execution ("npm install"); empty for
	// create and stop.
	Step        string
	SandboxName string
	SessionID   string
	Start       time.Time
	Duration    time.Duration // set at the end
	// Err is the failure, nil on success. Code is its code ("" on success).
	Err  error
	Code ErrorCode
	// Usage is the token usage, when known (execute only).
	Usage *Usage
}

// Outcome returns "ok" or the error code.
func (e PhaseEvent) Outcome() string {
	if e.Err == nil {
		return "ok"
	}
	if e.Code != "" {
		return string(e.Code)
	}
	return "error"
}

// Observer receives the start and end of each phase. Implementations must be
// safe for concurrent use when one Observer serves concurrent workloads, and
// should return quickly.
type Observer interface {
	PhaseStart(ctx context.Context, e PhaseEvent)
	PhaseEnd(ctx context.Context, e PhaseEvent)
}

// ObserverFuncs is an Observer made of optional functions.
type ObserverFuncs struct {
	Start func(ctx context.Context, e PhaseEvent)
	End   func(ctx context.Context, e PhaseEvent)
}

// PhaseStart calls f.Start if set.
func (f ObserverFuncs) PhaseStart(ctx context.Context, e PhaseEvent) {
	if f.Start != nil {
		f.Start(ctx, e)
	}
}

// PhaseEnd calls f.End if set.
func (f ObserverFuncs) PhaseEnd(ctx context.Context, e PhaseEvent) {
	if f.End != nil {
		f.End(ctx, e)
	}
}

// Observers fans events out to several observers, in order.
type Observers []Observer

// PhaseStart implements Observer.
func (os Observers) PhaseStart(ctx context.Context, e PhaseEvent) {
	for _, o := range os {
		o.PhaseStart(ctx, e)
	}
}

// PhaseEnd implements Observer.
func (os Observers) PhaseEnd(ctx context.Context, e PhaseEvent) {
	for _, o := range os {
		o.PhaseEnd(ctx, e)
	}
}

// LogObserver returns an Observer that logs every phase end with l (debug
// for starts, info for successes, warn for failures). A nil l uses
// slog.Default().
func LogObserver(l *slog.Logger) Observer { return logObserver{l: l} }

type logObserver struct{ l *slog.Logger }

func (o logObserver) logger() *slog.Logger {
	if o.l == nil {
		return slog.Default()
	}
	return o.l
}

func (o logObserver) PhaseStart(ctx context.Context, e PhaseEvent) {
	o.logger().DebugContext(ctx, "workload phase start", attrs(e)...)
}

func (o logObserver) PhaseEnd(ctx context.Context, e PhaseEvent) {
	a := append(attrs(e), slog.Duration("duration", e.Duration), slog.String("outcome", e.Outcome()))
	if e.Usage != nil {
		a = append(a, slog.Int("input_tokens", e.Usage.InputTokens), slog.Int("output_tokens", e.Usage.OutputTokens))
	}
	if e.Err != nil {
		o.logger().WarnContext(ctx, "workload phase failed", append(a, slog.String("error", e.Err.Error()))...)
		return
	}
	o.logger().InfoContext(ctx, "workload phase done", a...)
}

func attrs(e PhaseEvent) []any {
	a := []any{slog.String("phase", string(e.Phase))}
	if e.Step != "" {
		a = append(a, slog.String("step", e.Step))
	}
	if e.SandboxName != "" {
		a = append(a, slog.String("sandbox", e.SandboxName))
	}
	if e.SessionID != "" {
		a = append(a, slog.String("session", e.SessionID))
	}
	return a
}

// tracker emits start/end events for one phase.
type tracker struct {
	obs Observer
	ev  PhaseEvent
}

func begin(ctx context.Context, obs Observer, ev PhaseEvent) *tracker {
	ev.Start = time.Now()
	if obs != nil {
		obs.PhaseStart(ctx, ev)
	}
	return &tracker{obs: obs, ev: ev}
}

func (t *tracker) end(ctx context.Context, err error) PhaseEvent {
	t.ev.Duration = time.Since(t.ev.Start)
	t.ev.Err = err
	t.ev.Code = ErrorCodeOf(err)
	if t.obs != nil {
		t.obs.PhaseEnd(ctx, t.ev)
	}
	return t.ev
}
