package conformance

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"syscall"
	"testing"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// The scenarios of the calls that match the official SDK's filesystem,
// users and groups, drives and snapshot tree. The filesystem scenario uses
// relative paths only, so that it also passes against a fake whose
// commands run on the host.

func (c *conformance) runFilesystem(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioFilesystem, false)
	odd := []string{"-dash", "new\nline", "with space"}
	write(t, ctx, sb, "fs/plain.txt", "hello", "fs/dir/"+odd[0], "1", "fs/dir/"+odd[1], "2", "fs/dir/"+odd[2], "3")

	fi, err := sb.FS().Stat(ctx, "fs/plain.txt")
	if err != nil || fi.Size() != 5 || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 || fi.Name() != "plain.txt" {
		t.Errorf("Stat(fs/plain.txt) = %v, %v; want a regular file plain.txt of 5 bytes, mode 0644", fi, err)
	}
	list, err := sb.FS().ReadDir(ctx, "fs/dir")
	var names []string
	for _, d := range list {
		names = append(names, d.Name())
	}
	if err != nil || !slices.Equal(names, odd) {
		t.Errorf("ReadDir(fs/dir) = %q, %v; want %q", names, err, odd)
	}
	var walked []string
	for e, err := range sb.FS().Walk(ctx, "fs") {
		if err != nil {
			t.Errorf("Walk(fs): %v", err)
			break
		}
		walked = append(walked, e.Path)
	}
	if len(walked) != 5 {
		t.Errorf("Walk(fs) = %q, want 5 entries", walked)
	}

	if err := sb.FS().Symlink(ctx, "plain.txt", "fs/link"); err != nil {
		t.Fatalf("Symlink: %v", err)
	}
	li, err := sb.FS().Lstat(ctx, "fs/link")
	if err != nil || li.Mode().Type() != fs.ModeSymlink || li.Sys().(*sandbox.FileStat).LinkTarget != "plain.txt" {
		t.Errorf("Lstat(fs/link) = %v, %v; want a link to plain.txt", li, err)
	}
	if target, err := sb.FS().Readlink(ctx, "fs/link"); err != nil || target != "plain.txt" {
		t.Errorf("Readlink = %q, %v", target, err)
	}
	if err := sb.FS().Symlink(ctx, "x", "fs/plain.txt"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Symlink onto a file: %v, want fs.ErrExist", err)
	}

	if err := sb.FS().Rename(ctx, "fs/plain.txt", "fs/renamed.txt"); err != nil {
		t.Errorf("Rename: %v", err)
	}
	if _, err := sb.FS().Lstat(ctx, "fs/plain.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lstat after Rename: %v, want fs.ErrNotExist", err)
	}
	if err := sb.FS().WriteFile(ctx, "fs/copy.txt", []byte("hello world"), 0o640); err != nil {
		t.Errorf("WriteFile: %v", err)
	}
	if got := readString(t, ctx, sb, "fs/copy.txt"); got != "hello world" {
		t.Errorf("after WriteFile: %q, want \"hello world\"", got)
	}
	if fi, err := sb.FS().Stat(ctx, "fs/copy.txt"); err != nil || fi.Mode() != 0o640 {
		t.Errorf("Stat after WriteFile with mode 0640 = %v, %v", fi, err)
	}
	if err := sb.FS().Chmod(ctx, "fs/copy.txt", 0o600); err != nil {
		t.Errorf("Chmod: %v", err)
	}
	if fi, err := sb.FS().Stat(ctx, "fs/copy.txt"); err != nil || fi.Mode() != 0o600 {
		t.Errorf("Stat after Chmod = %v, %v; want mode 0600", fi, err)
	}

	if err := sb.FS().Remove(ctx, "fs/dir"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("Remove of a full directory: %v, want ENOTEMPTY", err)
	}
	if err := sb.FS().RemoveAll(ctx, "fs/dir"); err != nil {
		t.Errorf("RemoveAll: %v", err)
	}
	_, err = sb.FS().Stat(ctx, "fs/dir")
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "stat" || pe.Path != "fs/dir" {
		t.Errorf("Stat of a removed directory: %v, want a *fs.PathError stat fs/dir matching fs.ErrNotExist", err)
	}

	var seen []string
	err = fs.WalkDir(sb.FS().DirFS(ctx, "fs"), ".", func(p string, d fs.DirEntry, err error) error {
		seen = append(seen, p)
		return err
	})
	if want := []string{".", "copy.txt", "link", "renamed.txt"}; err != nil || !slices.Equal(seen, want) {
		t.Errorf("fs.WalkDir over DirFS = %q, %v; want %q", seen, err, want)
	}
}

func (c *conformance) runUsers(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioUsers, false)
	const user, group = "confuser", "confgroup"
	u, err := sb.CreateUser(ctx, user)
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if u.Home() != "/home/"+user {
		t.Errorf("Home = %q", u.Home())
	}
	if _, err := sb.CreateUser(ctx, user); !errors.Is(err, sandbox.ErrUserExists) {
		t.Errorf("CreateUser twice: %v, want ErrUserExists", err)
	}
	out, err := u.Command("whoami").Output(ctx)
	if err != nil || string(out) != user+"\n" {
		t.Errorf("whoami as the user: %q, %v", out, err)
	}
	g, err := sb.CreateGroup(ctx, group)
	if err != nil || g.SharedDir != "/shared/"+group {
		t.Fatalf("CreateGroup: %+v, %v", g, err)
	}
	if _, err := sb.CreateGroup(ctx, group); !errors.Is(err, sandbox.ErrGroupExists) {
		t.Errorf("CreateGroup twice: %v, want ErrGroupExists", err)
	}
	if err := u.AddToGroup(ctx, group); err != nil {
		t.Errorf("AddToGroup: %v", err)
	}
	nobody, err := sb.AsUser("nosuchuser")
	if err != nil {
		t.Fatalf("AsUser: %v", err)
	}
	if err := nobody.AddToGroup(ctx, group); !errors.Is(err, sandbox.ErrNoSuchUser) {
		t.Errorf("AddToGroup of an unknown user: %v, want ErrNoSuchUser", err)
	}
	if err := u.RemoveFromGroup(ctx, group); err != nil {
		t.Errorf("RemoveFromGroup: %v", err)
	}
}

func (c *conformance) runDrives(t *testing.T, ctx context.Context) {
	name := c.name("drive")
	if _, err := c.client.DeleteDrive(ctx, name); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("deleting a leftover drive %s: %v", name, err)
	}
	d, err := c.client.GetOrCreateDrive(ctx, name, sandbox.DriveParams{})
	if err != nil || d.Name != name || d.ID == "" {
		t.Fatalf("GetOrCreateDrive: %+v, %v", d, err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
		defer cancel()
		if _, err := c.client.DeleteDrive(cctx, name); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("cleanup: deleting drive %s: %v", name, err)
		}
	})
	if again, err := c.client.GetOrCreateDrive(ctx, name, sandbox.DriveParams{}); err != nil || again.ID != d.ID {
		t.Errorf("GetOrCreateDrive again: %+v, %v; want drive %s", again, err, d.ID)
	}
	if got, err := c.client.GetDrive(ctx, name); err != nil || got.ID != d.ID {
		t.Errorf("GetDrive: %+v, %v", got, err)
	}
	found := false
	for got, err := range c.client.ListDrives(ctx, sandbox.DriveListParams{NamePrefix: c.prefix}) {
		if err != nil {
			t.Fatalf("ListDrives: %v", err)
		}
		found = found || got.ID == d.ID
	}
	if !found {
		t.Errorf("ListDrives does not list drive %s", name)
	}
	if _, err := c.client.GetDrive(ctx, c.name("no-drive")); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("GetDrive of a missing drive: %v, want ErrNotFound", err)
	}
	if _, err := c.client.DeleteDrive(ctx, name); err != nil {
		t.Errorf("DeleteDrive: %v", err)
	}
	if _, err := c.client.GetDrive(ctx, name); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("GetDrive after DeleteDrive: %v, want ErrNotFound", err)
	}
}

func (c *conformance) runSnapshotTree(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioSnapshotTree, true)
	var ids []string
	for i := range 2 {
		snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
		if err != nil {
			t.Fatalf("Snapshot %d: %v", i+1, err)
		}
		ids = append(ids, snap.ID)
		if _, err := sb.Resume(ctx); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	}
	tree, err := c.client.SnapshotTree(ctx, ids[1], sandbox.SnapshotTreeParams{})
	if err != nil || tree.Anchor.Snapshot.ID != ids[1] || len(tree.Lineage) == 0 || tree.Lineage[0].Snapshot.ID != ids[0] {
		t.Fatalf("SnapshotTree(%s) = %+v, %v; want the anchor and its parent %s", ids[1], tree, err, ids[0])
	}
	if _, err := c.client.DeleteSnapshot(ctx, ids[0]); err != nil {
		t.Fatalf("DeleteSnapshot: %v", err)
	}
	if got, err := c.client.GetSnapshot(ctx, ids[0]); err != nil || got.Status != sandbox.SnapshotDeleted {
		t.Errorf("GetSnapshot of a deleted snapshot: %+v, %v; want status deleted", got, err)
	}
	if _, err := c.client.SnapshotTree(ctx, "snap_conformancemissing", sandbox.SnapshotTreeParams{}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("SnapshotTree of a missing snapshot: %v, want ErrNotFound", err)
	}
}
