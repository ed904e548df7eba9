package conformance

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// runHosted checks the answers hosted Vercel gives where the API reference
// and the official mock say otherwise, and what the client makes of them:
// recursive mkdir and file_error, executable_not_found, limits checked
// before any request, 410 for the commands of a stopped session, and a
// non-persistent sandbox that cannot be resumed but is created again, and
// a snapshot whose session is waited on until it has stopped.
// Streams cut by the edge take six minutes each; the tests of package
// sandbox cover them on the local server's clock.
func (c *conformance) runHosted(t *testing.T, ctx context.Context) {
	name := c.name(ScenarioHosted)
	fleeting := false
	sb := c.newSandboxWith(t, ctx, ScenarioHosted, func(p *sandbox.CreateParams) { p.Persistent = &fleeting })

	if err := sb.FS().MkdirAll(ctx, "conf-hosted/a/b", 0o755); err != nil {
		t.Fatalf("MkdirAll: %v", err)
	}
	if err := sb.FS().MkdirAll(ctx, "conf-hosted/a/b", 0o755); err != nil {
		t.Errorf("MkdirAll of an existing directory: %v", err)
	}
	if err := sb.FS().Mkdir(ctx, "conf-hosted/a", 0o755); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Mkdir of an existing directory: got %v, want fs.ErrExist", err)
	}
	if err := sb.FS().Mkdir(ctx, "conf-hosted/missing/x", 0o755); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Mkdir under a missing parent: got %v, want fs.ErrNotExist", err)
	}

	res, err := sb.Command("no-such-executable-conformance").Run(ctx)
	if !errors.Is(err, sandbox.ErrExecutableNotFound) || res != nil {
		t.Errorf("missing executable: got %v, %v; want ErrExecutableNotFound and no result", res, err)
	}
	big := map[string]string{"BIG": strings.Repeat("x", 5000)}
	cmd := sb.Command("true")
	cmd.Env = big
	if _, err := cmd.Run(ctx); !errors.Is(err, sandbox.ErrInvalidInput) {
		t.Errorf("env above 4 KB: got %v, want ErrInvalidInput before any request", err)
	}

	h, err := sh(sb, "printf done").Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := h.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if out, err := h.Output(ctx); err != nil || string(out) != "done" {
		t.Errorf("Output: %q, %v", out, err)
	}
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stale, err := c.client.Attach(h.Ref())
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if _, err := stale.Wait(ctx); !errors.Is(err, sandbox.ErrGone) {
		t.Errorf("Wait on a command of a stopped session: got %v, want ErrGone", err)
	}

	if _, err := c.client.Resume(ctx, name); !errors.Is(err, sandbox.ErrSnapshotNotFound) {
		t.Errorf("resuming a non-persistent sandbox: got %v, want ErrSnapshotNotFound", err)
	}
	again, err := c.client.GetOrCreate(ctx, sandbox.CreateParams{Name: name, Persistent: &fleeting,
		Tags: map[string]string{"sandboxtest": "conformance", "scenario": ScenarioHosted}})
	if err != nil {
		t.Fatalf("GetOrCreate after snapshot_not_found: %v", err)
	}
	if again.Session().Status != sandbox.StatusRunning {
		t.Errorf("GetOrCreate: session %s, want running", again.Session().Status)
	}

	// A snapshot may answer while the session is still snapshotting;
	// WaitStopped waits for the stop and the snapshot to be current.
	snap, err := again.Snapshot(ctx, sandbox.SnapshotParams{})
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	sess, err := again.WaitStopped(ctx)
	if err != nil {
		t.Fatalf("WaitStopped after Snapshot: %v", err)
	}
	if sess.Status != sandbox.StatusStopped || again.Info().CurrentSnapshotID != snap.ID {
		t.Errorf("after WaitStopped: session %s, current snapshot %q; want stopped, %q",
			sess.Status, again.Info().CurrentSnapshotID, snap.ID)
	}
}
