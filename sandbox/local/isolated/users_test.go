//go:build linux

package isolated_test

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// TestUsers makes users and groups as on the real image: each has an id
// of its own inside, owns its files there as an unprivileged host id, and
// the host's accounts do not change.
func TestUsers(t *testing.T) {
	t.Parallel()
	iso := newIsolated(t)
	if ok, why := iso.Users(); !ok {
		t.Skipf("SKIPPED: no users in sandboxes here: %s", why)
	}
	hostPasswd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	srv := sandboxtest.NewServer(t, local.WithExecutor(iso), local.WithDir(t.TempDir()))
	ctx := t.Context()
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{Name: "users"})
	require.NoError(t, err)
	run := func(cmd *command.Cmd) string {
		t.Helper()
		c := sb.Command(cmd.Name, cmd.Args...)
		c.Sudo = cmd.Sudo
		out, err := c.Output(ctx)
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}

	assert.Equal(t, "vercel-sandbox 1000", run(&command.Cmd{Name: "sh", Args: []string{"-c", "echo $(id -un) $(id -u)"}}))
	assert.Equal(t, "root 0", run(&command.Cmd{Name: "sh", Args: []string{"-c", "echo $(id -un) $(id -u)"}, Sudo: true}))

	cmd2 := sb.Command("unshare", "--user", "true")
	cmd2.Sudo = true
	_, err = cmd2.Output(ctx)
	assert.Error(t, err, "no user namespace of its own, even as root")

	u, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)
	res, err := u.Command("id", "-un").Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, "alice\n", string(res.Stdout))
	uid := run(&command.Cmd{Name: "id", Args: []string{"-u", "alice"}})
	assert.NotEqual(t, "1000", uid)
	assert.Equal(t, "alice /home/alice", run(&command.Cmd{Name: "sudo", Args: []string{"-u", "alice", "--", "sh", "-c", "echo $USER $HOME"}}))

	g, err := sb.CreateGroup(ctx, "team")
	require.NoError(t, err)
	require.NoError(t, u.AddToGroup(ctx, "team"))
	assert.Contains(t, strings.Fields(run(&command.Cmd{Name: "id", Args: []string{"-Gn", "alice"}})), "team")
	out, err := u.Command("id", "-Gn").Output(ctx)
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(out)), "team", "the user's commands hold its groups")
	assert.Equal(t, "drwxrws--- vercel-sandbox team", run(&command.Cmd{Name: "stat", Args: []string{"-c", "%A %U %G", g.SharedDir}}))

	run(&command.Cmd{Name: "sh", Args: []string{"-c", "echo hi > /vercel/sandbox/f"}})
	run(&command.Cmd{Name: "chown", Args: []string{"alice", "/vercel/sandbox/f"}, Sudo: true})
	assert.Equal(t, "alice", run(&command.Cmd{Name: "stat", Args: []string{"-c", "%U", "/vercel/sandbox/f"}}))
	_, err = u.Command("sh", "-c", "echo more >> /vercel/sandbox/f").Output(ctx)
	require.NoError(t, err, "the owner writes its file")

	// A snapshot keeps the owners: a sandbox made from it has alice's files.
	owners := &command.Cmd{Name: "stat", Args: []string{"-c", "%U %G", "/vercel/sandbox/f", "/home/alice"}}
	before := run(owners)
	require.Equal(t, "alice vercel-sandbox\nalice vercel-sandbox", before)
	snap, err := sb.Snapshot(ctx, sandbox.SnapshotParams{})
	require.NoError(t, err)
	restored, err := srv.Client().Create(ctx, sandbox.CreateParams{Name: "users-restored", Source: sandbox.SnapshotSource(snap.ID)})
	require.NoError(t, err)
	out, err = restored.Command(owners.Name, owners.Args...).Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, before, strings.TrimSpace(string(out)), "the snapshot kept the owners")

	// On the host: unprivileged ids, and the host's accounts unchanged.
	for _, p := range []string{"/vercel/sandbox/f", "/home/alice"} {
		hp, err := srv.HostPath("users", p)
		require.NoError(t, err)
		fi, err := os.Stat(hp)
		require.NoError(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		assert.NotEqual(t, uint32(os.Geteuid()), st.Uid, "%s belongs to alice's own host id", p)
		assert.Greater(t, st.Uid, uint32(65535), "%s: an id no host account uses", p)
	}
	after, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	assert.Equal(t, string(hostPasswd), string(after), "the host's /etc/passwd is untouched")
	assert.NotContains(t, string(after), "alice")
}

// TestUserRunsTheProgramOfThatName: a command a User runs is the program
// of that name, run as the user, whatever the name looks like: not an
// option of sudo's script ("-a", "-c", "--help") nor one more variable of
// env(1) ("X=1").
func TestUserRunsTheProgramOfThatName(t *testing.T) {
	t.Parallel()
	iso := newIsolated(t)
	if ok, why := iso.Users(); !ok {
		t.Skipf("SKIPPED: no users in sandboxes here: %s", why)
	}
	srv := sandboxtest.NewServer(t, local.WithExecutor(iso), local.WithDir(t.TempDir()))
	ctx := t.Context()
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{Name: "names"})
	require.NoError(t, err)
	u, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)
	names := []string{"-a", "-c", "X=1", "--help"}
	var progs []files.Entry
	for _, n := range names {
		progs = append(progs, files.FromBytes("bin/"+n, []byte("#!/bin/sh\necho \"ran ${0##*/} as $(id -un) $*\"\n")).WithMode(0o755))
	}
	require.NoError(t, u.FS().WriteFiles(ctx, progs, files.WriteParams{}))

	path := map[string]string{"PATH": "/home/alice/bin:/usr/bin:/bin"}
	for _, n := range names {
		cmd := u.Command(n, "x")
		cmd.Env = path
		out, err := cmd.Output(ctx)
		if assert.NoError(t, err, "%q", n) {
			assert.Equal(t, "ran "+n+" as alice x\n", string(out), "the program named %q ran, as the user", n)
		}
		// Without a PATH that finds it, the name is looked up as it is.
		_, err = u.Command(n, "true").Output(ctx)
		var exit *command.ExitError
		if assert.ErrorAs(t, err, &exit, "%q", n) {
			assert.Equal(t, 127, exit.ExitCode(), "%q", n)
			assert.Contains(t, string(exit.Stderr), n+": not found", "%q", n)
		}
	}
}
