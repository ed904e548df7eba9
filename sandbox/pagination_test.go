package sandbox_test

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// drain runs a listing to its end and returns its error.
func drain[T any](seq iter.Seq2[T, error]) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestRepeatedCursorStops serves listings whose pages name, as the next
// cursor, one already sent: a single one forever, or a cycle of three.
// Every listing stops with a *RepeatedCursorError at the first repeat,
// having sent exactly one request per distinct cursor, plus the first.
func TestRepeatedCursorStops(t *testing.T) {
	t.Parallel()
	listings := map[string]struct {
		key  string // the items of a page
		list func(ctx context.Context, c *sandbox.Client) error
	}{
		"sandboxes": {"sandboxes", func(ctx context.Context, c *sandbox.Client) error {
			return drain(c.List(ctx, sandbox.ListParams{}))
		}},
		"sessions": {"sessions", func(ctx context.Context, c *sandbox.Client) error {
			return drain(c.ListSessions(ctx, sandbox.PageParams{}))
		}},
		"snapshots": {"snapshots", func(ctx context.Context, c *sandbox.Client) error {
			return drain(c.ListSnapshots(ctx, sandbox.PageParams{}))
		}},
		"drives": {"drives", func(ctx context.Context, c *sandbox.Client) error {
			return drain(c.ListDrives(ctx, sandbox.DriveListParams{}))
		}},
	}
	cursors := map[string][]string{
		"one cursor forever": {"c1"},
		"a cycle of three":   {"c1", "c2", "c3"},
	}
	for name, l := range listings {
		for shape, cycle := range cursors {
			t.Run(name+"/"+shape, func(t *testing.T) {
				t.Parallel()
				var hits atomic.Int32
				c := hostileClient(t, func(w http.ResponseWriter, _ *http.Request) {
					n := hits.Add(1)
					next := cycle[int(n-1)%len(cycle)]
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(map[string]any{l.key: []any{}, "pagination": map[string]any{"count": 0, "next": next}})
				})
				err := l.list(t.Context(), c)
				var rc *sandbox.RepeatedCursorError
				require.ErrorAs(t, err, &rc)
				assert.ErrorIs(t, err, sandbox.ErrRepeatedCursor)
				assert.Equal(t, "c1", rc.Cursor)
				assert.Equal(t, int32(len(cycle)+1), hits.Load(), "one request per distinct cursor, plus the first; none after the repeat")
			})
		}
	}
}

// TestSnapshotTreeCycleStops serves a lineage that comes back to a
// snapshot already listed: the tree stops there instead of looping.
func TestSnapshotTreeCycleStops(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	lineage := []string{"snap_b", "snap_c", "snap_a"} // snap_a is where the walk starts
	c := hostileClient(t, func(w http.ResponseWriter, _ *http.Request) {
		n := hits.Add(1)
		id := lineage[int(n-1)%len(lineage)]
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"snapshots":  []any{map[string]any{"snapshot": map[string]any{"id": id}}},
			"pagination": map[string]any{"count": 1, "next": id},
		})
	})
	_, err := c.SnapshotTree(t.Context(), "snap_a", sandbox.SnapshotTreeParams{})
	var rc *sandbox.RepeatedCursorError
	require.ErrorAs(t, err, &rc)
	assert.Equal(t, "snap_a", rc.Cursor)
	assert.Equal(t, int32(3), hits.Load())
}
