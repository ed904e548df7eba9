package sandboxtest_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// TestOfficialSDKParity makes the filesystem, users and groups, drive and
// snapshot tree calls with the official TypeScript SDK (testdata/tssdk/
// parity.mjs) and then with the Go client, against one fake, and checks
// that both got the same answers. Each side works on its own copy of the
// files and its own names; the names are swapped before comparing.
func TestOfficialSDKParity(t *testing.T) {
	node, _ := requireTSSDK(t)
	ctx := t.Context()
	token := "tssdk-parity" // not a JWT
	srv := sandboxtest.NewServer(t,
		local.WithExecutor(sandboxtest.NewAccounts().Executor(hostexec.New())),
		local.WithHostPaths(true),
		local.WithToken(token),
		local.WithTeam(tssdkTeam),
		local.WithProject(tssdkProject),
	)
	c := srv.Client(sandbox.WithToken(token), sandbox.WithTeam(tssdkTeam), sandbox.WithProject(tssdkProject))
	sb, err := c.Create(ctx, sandbox.CreateParams{Name: "parity"})
	require.NoError(t, err)
	for _, side := range []string{"ts", "go"} {
		require.NoError(t, sb.FS().WriteFiles(ctx, []files.Entry{
			files.FromBytes(side+"/a.txt", []byte("hello")), files.FromBytes(side+"/sub/x", []byte("x"))}, files.WriteParams{}))
		require.NoError(t, sb.FS().Symlink(ctx, "a.txt", side+"/link"))
	}
	// One modification time for both copies, whenever they were written.
	_, err = sb.Command("touch", "-d", "@1767225600", "--", "ts/a.txt", "go/a.txt").Run(ctx)
	require.NoError(t, err)
	snapID := snapshotChain(t, c)

	out := runNodeScript(t, node, "parity.mjs", "SANDBOXTEST_URL="+srv.URL(), "SANDBOXTEST_TOKEN="+token,
		"PARITY_SANDBOX=parity", "PARITY_SNAPSHOT="+snapID)
	_, line, ok := strings.Cut(out, "RESULT ")
	require.True(t, ok, "parity.mjs printed no RESULT line")
	line, _, _ = strings.Cut(line, "\n")
	swap := strings.NewReplacer("tsuser", "gouser", "tsgroup", "gogroup", "parity-ts", "parity-go")
	var ts map[string]any
	require.NoError(t, json.Unmarshal([]byte(swap.Replace(line)), &ts))

	goResult := goParity(t, sb, c, snapID)
	tsDrive, goDrive := ts["drive"].(map[string]any), goResult["drive"].(map[string]any)
	for _, varying := range []string{"id", "created"} {
		require.NotEmpty(t, tsDrive[varying])
		require.NotEmpty(t, goDrive[varying])
		delete(tsDrive, varying)
		delete(goDrive, varying)
	}
	require.Equal(t, ts, goResult, "the Go client and the official SDK got different answers")
}

// snapshotChain makes two snapshots of a persistent sandbox, the second
// taken from the first, deletes the first and returns the second's id.
func snapshotChain(t *testing.T, c *sandbox.Client) string {
	ctx := t.Context()
	sb, err := c.Create(ctx, sandbox.CreateParams{Name: "parity-snap"})
	require.NoError(t, err)
	var ids []string
	for range 2 {
		snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
		require.NoError(t, err)
		ids = append(ids, snap.ID)
		_, err = sb.Resume(ctx)
		require.NoError(t, err)
	}
	_, err = c.DeleteSnapshot(ctx, ids[0])
	require.NoError(t, err)
	return ids[1]
}

// goParity makes parity.mjs's calls with the Go client, on the go/ copy,
// and returns the answers in the script's JSON shape.
func goParity(t *testing.T, sb *sandbox.Sandbox, c *sandbox.Client, snapID string) map[string]any {
	ctx := t.Context()
	out := map[string]any{}
	fi, err := sb.FS().Stat(ctx, "go/a.txt")
	require.NoError(t, err)
	st := fi.Sys().(*sandbox.FileStat)
	perm := uint32(fi.Mode().Perm())
	out["stat"] = map[string]any{"size": fi.Size(), "isFile": fi.Mode().IsRegular(), "isDir": fi.IsDir(), "perm": perm,
		"uid": st.UID, "gid": st.GID, "mtimeSec": fi.ModTime().Unix()}
	list, err := sb.FS().ReadDir(ctx, "go")
	require.NoError(t, err)
	var dir []map[string]any
	for _, d := range list {
		dir = append(dir, map[string]any{"name": d.Name(), "isDir": d.IsDir(), "isFile": d.Type().IsRegular(), "isLink": d.Type() == fs.ModeSymlink})
	}
	out["readdir"] = dir
	exists := func(p string) bool {
		_, err := sb.FS().Stat(ctx, p)
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		require.NoError(t, err)
		return true
	}
	out["exists"] = []bool{exists("go/a.txt"), exists("go/missing")}
	_, err = sb.FS().Stat(ctx, "go/missing")
	out["statMissing"] = errCode(err)
	out["rmMissing"] = errCode(sb.FS().Remove(ctx, "go/missing"))
	out["rename"] = errCode(sb.FS().Rename(ctx, "go/a.txt", "go/renamed.txt"))
	out["afterRename"] = []bool{exists("go/a.txt"), exists("go/renamed.txt")}
	out["rm"] = errCode(sb.FS().RemoveAll(ctx, "go/sub"))
	out["afterRm"] = exists("go/sub")

	u, err := sb.CreateUser(ctx, "gouser")
	require.NoError(t, err)
	out["user"] = map[string]any{"name": u.Name(), "home": u.Home()}
	_, err = sb.CreateUser(ctx, "gouser")
	out["userAgain"] = errCode(err)
	who, err := u.Command("whoami").Output(ctx)
	require.NoError(t, err)
	out["whoami"] = string(who)
	g, err := sb.CreateGroup(ctx, "gogroup")
	require.NoError(t, err)
	out["group"] = map[string]any{"groupname": g.Name, "sharedDir": g.SharedDir}

	d, err := c.GetOrCreateDrive(ctx, "parity-go", sandbox.DriveParams{MaxSize: 1 << 30})
	require.NoError(t, err)
	out["drive"] = map[string]any{"id": d.ID, "name": d.Name, "region": d.Region, "maxSize": d.MaxSize, "created": d.CreatedAt.UnixMilli()}
	var names []string
	for d, err := range c.ListDrives(ctx, sandbox.DriveListParams{PageSize: 1}) {
		require.NoError(t, err)
		names = append(names, d.Name)
	}
	slices.Sort(names)
	out["drives"] = names
	_, err = c.DeleteDrive(ctx, "parity-go")
	out["driveAfterDelete"] = errCode(err)

	tree, err := c.SnapshotTree(ctx, snapID, sandbox.SnapshotTreeParams{})
	require.NoError(t, err)
	var lineage []map[string]any
	for _, n := range tree.Lineage {
		lineage = append(lineage, map[string]any{"id": n.Snapshot.ID, "status": string(n.Snapshot.Status), "siblings": len(n.Siblings), "count": n.Count})
	}
	out["tree"] = map[string]any{"anchor": tree.Anchor.Snapshot.ID, "lineage": lineage}

	// The same JSON round trip as the script's answer, so numbers compare.
	data, err := json.Marshal(out)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(data, &back))
	return back
}

// errCode names an error the way parity.mjs does: "ok", the errno's
// name, or "user-exists".
func errCode(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, sandbox.ErrUserExists):
		return "user-exists"
	case errors.As(err, &errno):
		for name, e := range map[string]syscall.Errno{"ENOENT": syscall.ENOENT, "EEXIST": syscall.EEXIST, "EACCES": syscall.EACCES} {
			if errno == e {
				return name
			}
		}
	}
	return err.Error()
}
