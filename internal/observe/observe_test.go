package observe_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/sbx-go/vercel-sandbox/internal/observe"
)

// Without an observer the hook costs no allocation: the attributes stay
// on the caller's stack.
func TestNoObserverAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		octx, op := observe.Start(ctx, nil, observe.OpRun, slog.String(observe.KeySandbox, "name"))
		observe.Event(octx, observe.EventRetry, slog.Int(observe.KeyAttempt, 2))
		observe.Set(octx, slog.Int64(observe.KeyWireBytes, 1))
		op.Set(slog.String(observe.KeySession, "sid"), slog.Int(observe.KeyExitCode, 0))
		op.Event(observe.EventReattach)
		if observe.Env(octx, true) != nil {
			t.Fatal("variables without an observer")
		}
		op.End(nil)
	})
	if allocs != 0 {
		t.Errorf("%v allocations a call without an observer", allocs)
	}
}
