package sandbox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// SnapshotTreeNode is one snapshot of a tree with the other children of
// its parent.
type SnapshotTreeNode struct {
	Snapshot Snapshot
	Siblings []Snapshot
	// Count is the number the API sends with the node (a decimal string
	// on the wire); the local backend sends the number of snapshots taken
	// from this one.
	Count int
}

// SnapshotTree is the family of a snapshot.
type SnapshotTree struct {
	// Anchor is the snapshot asked about.
	Anchor SnapshotTreeNode
	// Lineage is the walk away from the anchor: its parent, then the
	// parent's parent, up to the root (or, with Descendants, its oldest
	// child, then that child's oldest child, and so on).
	Lineage []SnapshotTreeNode
}

// SnapshotTreeParams configure SnapshotTree.
type SnapshotTreeParams struct {
	// Descendants walks down through the oldest child at each step
	// instead of up through the parents.
	Descendants bool
	// PageSize is how many nodes one request fetches (1–50; 0: the API's
	// default). Every page is fetched.
	PageSize int
}

// SnapshotTree returns the lineage of a snapshot and the siblings at each
// step. Deleted snapshots stay in the tree with status "deleted". A
// missing snapshot gives an error matching ErrNotFound.
func (c *Client) SnapshotTree(ctx context.Context, snapshotID string, p SnapshotTreeParams) (SnapshotTree, error) {
	if err := validateID("snapshotID", snapshotID); err != nil {
		return SnapshotTree{}, err
	}
	if p.PageSize < 0 || p.PageSize > 50 {
		return SnapshotTree{}, apierr.Invalid("PageSize", "must be 1–50, got %d", p.PageSize)
	}
	project, err := c.project(ctx)
	if err != nil {
		return SnapshotTree{}, err
	}
	q := projectQuery("project", project)
	if p.PageSize > 0 {
		q.Set("limit", strconv.Itoa(p.PageSize))
	}
	if p.Descendants {
		q.Set("sortOrder", "asc")
	}
	var tree SnapshotTree
	seen := map[string]bool{snapshotID: true}
	for id, first, n := snapshotID, true, 1; ; first, n = false, n+1 {
		q.Set("snapshotId", id)
		var page wire.SnapshotTreeResponse
		if err := c.core.JSON(ctx, &httpcore.Call{Method: "GET", Path: "/v2/sandboxes/snapshots/tree", Query: q,
			Safety: httpcore.Idempotent, Op: "get snapshot tree"}, &page); err != nil {
			return SnapshotTree{}, err
		}
		if first && page.Anchor != nil {
			if tree.Anchor, err = treeNodeFromWire(page.Anchor); err != nil {
				return SnapshotTree{}, err
			}
		}
		for i := range page.Snapshots {
			n, err := treeNodeFromWire(&page.Snapshots[i])
			if err != nil {
				return SnapshotTree{}, err
			}
			tree.Lineage = append(tree.Lineage, n)
		}
		next := page.Pagination.Next
		if next == nil || *next == "" || *next == id || len(page.Snapshots) == 0 {
			return tree, nil
		}
		if seen[*next] {
			// A lineage that comes back to a snapshot would loop.
			return SnapshotTree{}, &RepeatedCursorError{Op: "get snapshot tree", Cursor: *next, Pages: n}
		}
		seen[*next] = true
		id = *next
	}
}

func treeNodeFromWire(w *wire.SnapshotTreeNode) (SnapshotTreeNode, error) {
	n := SnapshotTreeNode{Snapshot: snapshotFromWire(&w.Snapshot)}
	for i := range w.Siblings {
		n.Siblings = append(n.Siblings, snapshotFromWire(&w.Siblings[i]))
	}
	if w.Count != "" {
		c, err := strconv.Atoi(w.Count)
		if err != nil {
			return n, fmt.Errorf("vercel sandbox: snapshot tree: count %q of %s is not a number", w.Count, w.Snapshot.ID)
		}
		n.Count = c
	}
	return n, nil
}
