package sandbox_test

import (
	"context"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// accountsEnv is a fake whose script plays the accounts of an image.
func accountsEnv(t *testing.T) (*env, *sandboxtest.Accounts) {
	t.Helper()
	e := newEnv(t)
	acc := sandboxtest.NewAccounts()
	acc.Install(e.script)
	return e, acc
}

func TestCreateUserAndGroups(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, acc := accountsEnv(t)
	sb := e.create("")

	alice, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, "/home/alice", alice.Home())
	require.Contains(t, acc.Users(), "alice")

	_, err = sb.CreateUser(ctx, "alice")
	require.ErrorIs(t, err, sandbox.ErrUserExists, "useradd exit 9")
	var ae *sandbox.AccountError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "alice", ae.User)
	var exit *command.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 9, exit.ExitCode())

	g, err := sb.CreateGroup(ctx, "devs")
	require.NoError(t, err)
	require.Equal(t, sandbox.Group{Name: "devs", SharedDir: "/shared/devs"}, g)
	_, err = sb.CreateGroup(ctx, "devs")
	require.ErrorIs(t, err, sandbox.ErrGroupExists)

	bob, err := sb.AsUser("bob")
	require.NoError(t, err)
	require.NoError(t, alice.AddToGroup(ctx, "devs"))
	require.Equal(t, []string{"devs"}, acc.GroupsOf("alice"))
	require.ErrorIs(t, bob.AddToGroup(ctx, "devs"), sandbox.ErrNoSuchUser)
	require.ErrorIs(t, alice.AddToGroup(ctx, "ops"), sandbox.ErrNoSuchGroup)
	require.NoError(t, alice.RemoveFromGroup(ctx, "devs"))
	require.Empty(t, acc.GroupsOf("alice"))
	require.ErrorIs(t, alice.RemoveFromGroup(ctx, "ops"), sandbox.ErrNoSuchGroup)

	calls := e.script.Calls()
	var lines []string
	for _, c := range calls {
		if c.Sudo {
			lines = append(lines, c.CommandLine())
		}
	}
	require.Contains(t, lines, "useradd -m -s /bin/bash -- alice", "the official SDK's useradd, with sudo")
	require.Contains(t, lines, "chmod 770 -- /home/alice")
	require.Contains(t, lines, "chmod 2770 -- /shared/devs")
}

func TestAccountNamesAreValidatedFirst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := accountsEnv(t)
	sb := e.create("")
	alice, err := sb.AsUser("alice")
	require.NoError(t, err)
	before := len(e.srv.Requests())
	for _, bad := range []string{"", "Alice", "1st", "-x", "a b", "a;rm", strings.Repeat("a", 33)} {
		_, err := sb.CreateUser(ctx, bad)
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
		_, err = sb.AsUser(bad)
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
		_, err = sb.CreateGroup(ctx, bad)
		require.ErrorIs(t, err, sandbox.ErrInvalidInput, "%q", bad)
		require.ErrorIs(t, alice.AddToGroup(ctx, bad), sandbox.ErrInvalidInput)
		require.ErrorIs(t, alice.RemoveFromGroup(ctx, bad), sandbox.ErrInvalidInput)
	}
	require.Len(t, e.srv.Requests(), before, "nothing was sent")
}

func TestUserRunsCommandsAsItself(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := accountsEnv(t)
	e.handle("printenv", sandboxtest.EnvHandler())
	sb := e.create("")
	alice, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)

	out, err := alice.Command("whoami").Output(ctx)
	require.NoError(t, err)
	require.Equal(t, "alice\n", string(out))

	cmd := alice.Command("printenv")
	cmd.Env = map[string]string{"B": "2", "A": "1"}
	cmd.Dir = "/tmp"
	_, err = cmd.Run(ctx)
	require.NoError(t, err)
	calls := e.script.Calls()
	last := calls[len(calls)-1]
	require.Equal(t, "printenv", last.Name, "the wrapped command reached the script")
	require.Equal(t, "/tmp", last.Cwd)
	var sudo sandboxtest.Call
	for _, c := range calls {
		if c.Name == "sudo" {
			sudo = c
		}
	}
	require.Equal(t, []string{"-u", "alice", "--", "bash", "-c", `cd "$1" || exit 1; shift; exec -- "$@"`, "bash", "/tmp",
		"env", "--", "A=1", "B=2", "printenv"}, sudo.Args, "the official SDK's sudo line, exec's options ended; env survives sudo")
	require.False(t, sudo.Sudo)

	// The fake reads the line as env(1) does: a name holding "=" is the
	// command, not one more variable.
	e.handle("X=1", sandboxtest.Reply{})
	cmd2 := alice.Command("X=1", "-a")
	cmd2.Env = map[string]string{"K": "v"}
	cmd2.Dir = "/tmp"
	_, err = cmd2.Run(ctx)
	require.NoError(t, err)
	calls = e.script.Calls()
	last = calls[len(calls)-1]
	require.Equal(t, "X=1", last.Name)
	require.Equal(t, []string{"-a"}, last.Args)
	require.Equal(t, "v", last.Env["K"])

	root, err := sb.AsUser("root")
	require.NoError(t, err)
	require.Equal(t, "/root", root.Home())
	ghost, err := sb.AsUser("ghost")
	require.NoError(t, err)
	_, err = ghost.Command("whoami").Run(ctx)
	var exit *command.ExitError
	require.ErrorAs(t, err, &exit)
	require.Contains(t, string(exit.Stderr), "unknown user ghost")

	_, err = alice.Command("").Run(ctx)
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
}

func TestUserFilesAreItsOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := accountsEnv(t)
	e.handle("base64", sandboxtest.HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		if cmd.Args[len(cmd.Args)-1] == "/home/alice/notes/a.txt" {
			io.WriteString(cmd.Stdout, "aGVsbG8=\n")
			return 0
		}
		io.WriteString(cmd.Stderr, "base64: "+cmd.Args[len(cmd.Args)-1]+": No such file or directory\n")
		return 1
	}))
	sb := e.create("")
	alice, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)

	require.NoError(t, alice.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("notes/a.txt", []byte("hello"))}, files.WriteParams{}))
	var chowns []string
	for _, c := range e.script.Calls() {
		if c.Name == "chown" || c.Name == "chmod" {
			chowns = append(chowns, c.CommandLine())
		}
	}
	require.Contains(t, chowns, "chown alice:alice -- /home/alice/notes/a.txt", "the file is the user's")
	require.Contains(t, chowns, "chown alice:vercel-sandbox -- /home/alice/notes", "directories stay reachable by the file API")
	require.Contains(t, chowns, "chmod 770 -- /home/alice/notes")

	data, err := alice.FS().ReadFile(ctx, "notes/a.txt")
	require.NoError(t, err)
	require.Equal(t, "hello", string(data))
	_, err = alice.FS().Open(ctx, "missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestAccountRefusalsAreTyped(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := accountsEnv(t)
	e.script.Override(sandboxtest.MatchName("useradd"), sandboxtest.Reply{Stderr: "useradd: Permission denied.\nuseradd: cannot lock /etc/passwd; try again later.\n", ExitCode: 1})
	e.script.Override(sandboxtest.MatchName("groupadd"), sandboxtest.Reply{Stderr: "groupadd: cannot open /etc/group\n", ExitCode: 10})
	sb := e.create("")
	_, err := sb.CreateUser(ctx, "alice")
	require.ErrorIs(t, err, fs.ErrPermission)
	require.NotErrorIs(t, err, sandbox.ErrUserExists)
	var ae *sandbox.AccountError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "useradd: cannot lock /etc/passwd; try again later.", ae.Message)
	_, err = sb.CreateGroup(ctx, "devs")
	require.ErrorAs(t, err, &ae)
	require.Contains(t, err.Error(), "cannot open /etc/group")
}

// TestUserFileCallsRunRealTools runs a user's file calls as real
// processes: the account tools are played, the rest runs on the host.
func TestUserFileCallsRunRealTools(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := sandboxtest.NewServer(t, local.WithExecutor(sandboxtest.NewAccounts().Executor(hostexec.New())))
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)
	u, err := sb.CreateUser(ctx, "grace")
	require.NoError(t, err)
	require.NoError(t, u.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("proj/a.txt", []byte("a")), files.FromBytes("proj/b.txt", []byte("bb"))}, files.WriteParams{}))

	fi, err := u.FS().Stat(ctx, "proj/b.txt")
	require.NoError(t, err, "relative to the home directory")
	require.EqualValues(t, 2, fi.Size())
	list, err := u.FS().ReadDir(ctx, "proj")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.NoError(t, u.FS().Rename(ctx, "proj/a.txt", "proj/c.txt"))
	_, err = u.FS().Stat(ctx, "proj/c.txt")
	require.NoError(t, err)
	_, err = u.FS().Lstat(ctx, "proj/a.txt")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, u.FS().RemoveAll(ctx, "proj"))
	// "." is the home directory: hostexec would read an absolute path on the host.
	entries, err := fs.ReadDir(u.FS().DirFS(ctx, "."), ".")
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestUserOpenStreams: a User's Open decodes base64 as it arrives, and
// closing it early stops the command.
func TestUserOpenStreams(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := accountsEnv(t)
	stopped := make(chan struct{})
	e.handle("base64", sandboxtest.HandlerFunc(func(hctx context.Context, cmd *local.Cmd, signals <-chan int) int {
		defer close(stopped)
		line := strings.Repeat("QUJD", 19) + "\n" // "ABC" 19 times
		for range 1 << 20 {                       // 77 MiB at most
			select {
			case <-hctx.Done():
				return 1
			case <-signals:
				return 137
			default:
			}
			if _, err := io.WriteString(cmd.Stdout, line); err != nil {
				return 1
			}
		}
		return 0
	}))
	sb := e.create("")
	alice, err := sb.CreateUser(ctx, "alice")
	require.NoError(t, err)

	rc, err := alice.FS().Open(ctx, "big")
	require.NoError(t, err)
	buf := make([]byte, 4<<10)
	_, err = io.ReadFull(rc, buf)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("ABC", len(buf)/3), string(buf[:len(buf)/3*3]))
	require.NoError(t, rc.Close())
	waitFor(t, stopped, "the command to stop after Close")
}
