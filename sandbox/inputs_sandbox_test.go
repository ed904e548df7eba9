package sandbox_test

import (
	"context"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// inputFixture is a fake with one sandbox, a user of it and a handle to a
// command, shared by the cases (which send no request).
type inputFixture struct {
	env  *env
	ctx  context.Context
	c    *sandbox.Client
	sb   *sandbox.Sandbox
	user *sandbox.User
	h    *command.Handle
}

func newInputFixture(t *testing.T) *inputFixture {
	e := newEnv(t)
	sb := e.create("inputs")
	user, err := sb.AsUser("alice")
	require.NoError(t, err)
	h, err := sb.Attach("cmd_0123")
	require.NoError(t, err)
	return &inputFixture{env: e, ctx: t.Context(), c: e.c, sb: sb, user: user, h: h}
}

const nul = "a\x00b"

// badUTF8 is a path that JSON cannot carry: encoding/json would send
// "u/\uFFFDx", another path.
const badUTF8 = "u/\xffx"

var long = strings.Repeat("x", 300)

// pathCases refuses "", a NUL byte, invalid UTF-8 and (when file) a path
// that names a directory, for an entry point taking a sandbox path.
func pathCases(entry, field string, file bool, call func(f *inputFixture, p string) error) []inputCase {
	bad := []string{"", nul, badUTF8}
	if file {
		bad = append(bad, "a/", "dir/.", "dir/..", "/")
	}
	out := make([]inputCase, 0, len(bad))
	for _, p := range bad {
		out = append(out, inputCase{entry: entry, field: field, call: func(f *inputFixture) error { return call(f, p) }})
	}
	return out
}

func ignore[T any](_ T, err error) error { return err }

func sandboxCases() []inputCase {
	dur := func(d time.Duration) *time.Duration { return &d }
	cs := []inputCase{
		{entry: "sandbox.NewClient", field: "WithHTTPClient", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithHTTPClient(nil)))
		}},
		{entry: "sandbox.WithCredentials", field: "WithCredentials", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithCredentials(nil)))
		}},
		{entry: "sandbox.WithTransport", field: "WithTransport", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithTransport(nil)))
		}},
		{entry: "sandbox.WithHTTPClient", field: "WithHTTPClient", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithHTTPClient(nil)))
		}},
		{entry: "sandbox.WithMaxResponseSize", field: "WithMaxResponseSize", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithMaxResponseSize(-1)))
		}},
		{entry: "sandbox.WithBaseURL", field: "BaseURL", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithBaseURL("ftp://example.com")))
		}},
		{entry: "sandbox.WithRequestTimeout", field: "RequestTimeout", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithRequestTimeout(-time.Second)))
		}},
		{entry: "sandbox.WithMiddleware", field: "WithMiddleware[1]", call: func(*inputFixture) error {
			pass := func(r *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) { return next(r) }
			return ignore(sandbox.NewClient(sandbox.WithMiddleware(pass, nil)))
		}},
		{entry: "sandbox.WithRetryPolicy", field: "WithRetryPolicy.BaseDelay", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithRetryPolicy(sandbox.RetryPolicy{BaseDelay: -time.Second})))
		}},
		{entry: "sandbox.WithRetryPolicy", field: "WithRetryPolicy.MaxRetryAfter", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithRetryPolicy(sandbox.RetryPolicy{MaxRetryAfter: -time.Second})))
		}},
		{entry: "sandbox.WithToken", field: "WithToken", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithToken(""), sandbox.WithTeam("team"), sandbox.WithProject("prj")))
		}},
		{entry: "sandbox.WithToken", field: "WithToken", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithToken("tok"), sandbox.WithTeam("team"), sandbox.WithProject("")))
		}},
		{entry: "sandbox.WithToken", field: "WithToken", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithToken("tok")))
		}},
		{entry: "sandbox.ValidateName", field: "Name", call: func(*inputFixture) error { return sandbox.ValidateName("a b") }},
		{entry: "sandbox.NewName", field: "Name", call: func(*inputFixture) error {
			return sandbox.ValidateName(sandbox.NewName("bad prefix"))
		}},
		{entry: "sandbox.CreateParams.Validate", field: "Ports", call: func(*inputFixture) error {
			return (&sandbox.CreateParams{Ports: []int{1}}).Validate()
		}},
		{entry: "sandbox.ForkParams.Validate", field: "VCPUs", call: func(*inputFixture) error {
			return (&sandbox.ForkParams{VCPUs: -1}).Validate()
		}},
		{entry: "sandbox.UpdateParams.Validate", field: "VCPUs", call: func(*inputFixture) error {
			return (&sandbox.UpdateParams{VCPUs: -2}).Validate()
		}},
		{entry: "sandbox.NetworkPolicy.Validate", field: "NetworkPolicy.Allow[0]", call: func(*inputFixture) error {
			return (&sandbox.NetworkPolicy{Allow: []string{nul}}).Validate()
		}},
		{entry: "sandbox.Client.Create", field: "Name", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Name: "a/b"}))
		}},
		{entry: "sandbox.Client.Create", field: "Env[K]", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Env: map[string]string{"K": "u\xffx"}}))
		}},
		{entry: "sandbox.Client.Create", field: "Env", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Env: map[string]string{"K\xff": "v"}}))
		}},
		{entry: "sandbox.Client.Create", field: "Tags[k]", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Tags: map[string]string{"k": "\xff"}}))
		}},
		{entry: "sandbox.Client.Create", field: "Tags", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Tags: map[string]string{"\xffk": "v"}}))
		}},
		{entry: "sandbox.Client.GetOrCreate", field: "Name", call: func(f *inputFixture) error {
			return ignore(f.c.GetOrCreate(f.ctx, sandbox.CreateParams{Name: nul}))
		}},
		{entry: "sandbox.Client.Get", field: "Name", call: func(f *inputFixture) error { return ignore(f.c.Get(f.ctx, "")) }},
		{entry: "sandbox.Client.Resume", field: "Name", call: func(f *inputFixture) error { return ignore(f.c.Resume(f.ctx, "../x")) }},
		{entry: "sandbox.Client.Delete", field: "Name", call: func(f *inputFixture) error { return f.c.Delete(f.ctx, "", sandbox.DeleteParams{}) }},
		{entry: "sandbox.Client.Stop", field: "Name", call: func(f *inputFixture) error { return ignore(f.c.Stop(f.ctx, "")) }},
		{entry: "sandbox.Client.Fork", field: "Name", call: func(f *inputFixture) error {
			return ignore(f.c.Fork(f.ctx, "", sandbox.ForkParams{}))
		}},
		{entry: "sandbox.Client.Update", field: "Name", call: func(f *inputFixture) error {
			return ignore3(f.c.Update(f.ctx, "", sandbox.UpdateParams{}))
		}},
		{entry: "sandbox.Client.GetSession", field: "sessionID", call: func(f *inputFixture) error { return ignore3(f.c.GetSession(f.ctx, "")) }},
		{entry: "sandbox.Client.ListSessionCommands", field: "sessionID", call: func(f *inputFixture) error {
			return errOf(f.c.ListSessionCommands(f.ctx, "a/b"))
		}},
		{entry: "sandbox.Client.Update", field: "NetworkID", call: func(f *inputFixture) error {
			return ignore3(f.c.Update(f.ctx, f.sb.Name(), sandbox.UpdateParams{NetworkID: "net_1", ClearNetworkID: true}))
		}},
		{entry: "sandbox.Client.StopSession", field: "sessionID", call: func(f *inputFixture) error { return ignore(f.c.StopSession(f.ctx, "a/b")) }},
		{entry: "sandbox.Client.ExtendSessionTimeout", field: "sessionID", call: func(f *inputFixture) error {
			return ignore(f.c.ExtendSessionTimeout(f.ctx, "", time.Minute))
		}},
		{entry: "sandbox.Client.ExtendSessionTimeout", field: "d", call: func(f *inputFixture) error {
			return ignore(f.c.ExtendSessionTimeout(f.ctx, f.sb.SessionID(), -time.Minute))
		}},
		{entry: "sandbox.Client.SetSessionNetworkPolicy", field: "sessionID", call: func(f *inputFixture) error {
			return ignore(f.c.SetSessionNetworkPolicy(f.ctx, "", sandbox.AllowAll()))
		}},
		{entry: "sandbox.Client.SetSessionNetworkPolicy", field: "NetworkPolicy", call: func(f *inputFixture) error {
			return ignore(f.c.SetSessionNetworkPolicy(f.ctx, f.sb.SessionID(), nil))
		}},
		{entry: "sandbox.Client.SnapshotSession", field: "sessionID", call: func(f *inputFixture) error {
			return ignore(f.c.SnapshotSession(f.ctx, "", sandbox.SnapshotParams{}))
		}},
		{entry: "sandbox.Client.SnapshotSession", field: "Expiration", call: func(f *inputFixture) error {
			return ignore(f.c.SnapshotSession(f.ctx, f.sb.SessionID(), sandbox.SnapshotParams{Expiration: dur(-time.Hour)}))
		}},
		{entry: "sandbox.Client.GetSnapshot", field: "snapshotID", call: func(f *inputFixture) error { return ignore(f.c.GetSnapshot(f.ctx, "")) }},
		{entry: "sandbox.Client.DeleteSnapshot", field: "snapshotID", call: func(f *inputFixture) error {
			return ignore(f.c.DeleteSnapshot(f.ctx, "a/b"))
		}},
		{entry: "sandbox.Client.SnapshotTree", field: "snapshotID", call: func(f *inputFixture) error {
			return ignore(f.c.SnapshotTree(f.ctx, "", sandbox.SnapshotTreeParams{}))
		}},
		{entry: "sandbox.Client.SnapshotTree", field: "PageSize", call: func(f *inputFixture) error {
			return ignore(f.c.SnapshotTree(f.ctx, "snap_1", sandbox.SnapshotTreeParams{PageSize: -1}))
		}},
		{entry: "sandbox.Client.List", field: "PageSize", call: func(f *inputFixture) error {
			return errOf(f.c.List(f.ctx, sandbox.ListParams{PageSize: -1}))
		}},
		{entry: "sandbox.Client.ListSessions", field: "PageSize", call: func(f *inputFixture) error {
			return errOf(f.c.ListSessions(f.ctx, sandbox.PageParams{PageSize: 51}))
		}},
		{entry: "sandbox.Client.ListSnapshots", field: "SandboxName", call: func(f *inputFixture) error {
			return errOf(f.c.ListSnapshots(f.ctx, sandbox.PageParams{SandboxName: nul}))
		}},
		{entry: "sandbox.Client.ListDrives", field: "PageSize", call: func(f *inputFixture) error {
			return errOf(f.c.ListDrives(f.ctx, sandbox.DriveListParams{PageSize: -1}))
		}},
		{entry: "sandbox.Client.GetOrCreateDrive", field: "name", call: func(f *inputFixture) error {
			return ignore(f.c.GetOrCreateDrive(f.ctx, "", sandbox.DriveParams{}))
		}},
		{entry: "sandbox.Client.GetOrCreateDrive", field: "MaxSize", call: func(f *inputFixture) error {
			return ignore(f.c.GetOrCreateDrive(f.ctx, "d", sandbox.DriveParams{MaxSize: -1}))
		}},
		{entry: "sandbox.Client.GetDrive", field: "name", call: func(f *inputFixture) error { return ignore(f.c.GetDrive(f.ctx, nul)) }},
		{entry: "sandbox.Client.DeleteDrive", field: "name", call: func(f *inputFixture) error { return ignore(f.c.DeleteDrive(f.ctx, "")) }},
		{entry: "sandbox.Client.Health", field: "Name", call: func(f *inputFixture) error {
			return ignore(f.c.Health(f.ctx, "", sandbox.HealthParams{}))
		}},
		{entry: "sandbox.Client.SessionHealth", field: "sessionID", call: func(f *inputFixture) error {
			return ignore(f.c.SessionHealth(f.ctx, nul, sandbox.HealthParams{}))
		}},
		{entry: "sandbox.Sandbox.Health", field: "HealthParams.Timeout", call: func(f *inputFixture) error {
			return ignore(f.sb.Health(f.ctx, sandbox.HealthParams{Timeout: -time.Second}))
		}},
		{entry: "sandbox.Sandbox.Health", field: "HealthParams.Command[0]", call: func(f *inputFixture) error {
			return ignore(f.sb.Health(f.ctx, sandbox.HealthParams{Command: []string{" "}}))
		}},
		{entry: "sandbox.Client.OpenSessionInteractive", field: "sessionID", call: func(f *inputFixture) error {
			return ignore(f.c.OpenSessionInteractive(f.ctx, ""))
		}},
		{entry: "sandbox.Client.Attach", field: "Ref", call: func(f *inputFixture) error { return ignore(f.c.Attach(command.Ref{})) }},
		{entry: "sandbox.GitSource", field: "Source", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Source: sandbox.GitSource("", sandbox.GitParams{})}))
		}},
		{entry: "sandbox.TarballSource", field: "Source", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Source: sandbox.TarballSource("")}))
		}},
		{entry: "sandbox.SnapshotSource", field: "Source", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Source: sandbox.SnapshotSource("")}))
		}},
		{entry: "sandbox.WithSizedUploads", field: "WithSizedUploads", call: func(*inputFixture) error {
			return ignore(sandbox.NewClient(sandbox.WithSizedUploads(nul)))
		}},

		// Sandbox.
		{entry: "sandbox.Sandbox.Command", field: "Cmd.Name", call: func(f *inputFixture) error {
			return ignore(f.sb.Command("").Run(f.ctx))
		}},
		{entry: "sandbox.Sandbox.Attach", field: "CommandID", call: func(f *inputFixture) error { return ignore(f.sb.Attach("")) }},
		{entry: "sandbox.Sandbox.Attach", field: "CommandID", call: func(f *inputFixture) error { return ignore(f.sb.Attach("a/b")) }},
		{entry: "sandbox.Sandbox.Domain", field: "port", call: func(f *inputFixture) error { return ignore(f.sb.Domain(-1)) }},
		{entry: "sandbox.Sandbox.ExtendTimeout", field: "d", call: func(f *inputFixture) error { return ignore(f.sb.ExtendTimeout(f.ctx, 0)) }},
		{entry: "sandbox.Sandbox.SetNetworkPolicy", field: "NetworkPolicy", call: func(f *inputFixture) error {
			return ignore(f.sb.SetNetworkPolicy(f.ctx, nil))
		}},
		{entry: "sandbox.Sandbox.Snapshot", field: "Expiration", call: func(f *inputFixture) error {
			return ignore(f.sb.Snapshot(f.ctx, sandbox.SnapshotParams{Expiration: dur(time.Minute)}))
		}},
		{entry: "sandbox.Sandbox.Fork", field: "Name", call: func(f *inputFixture) error {
			return ignore(f.sb.Fork(f.ctx, sandbox.ForkParams{Name: nul}))
		}},
		{entry: "sandbox.Sandbox.Update", field: "VCPUs", call: func(f *inputFixture) error {
			return f.sb.Update(f.ctx, sandbox.UpdateParams{VCPUs: 3})
		}},
		{entry: "sandbox.Sandbox.AsUser", field: "name", call: func(f *inputFixture) error { return ignore(f.sb.AsUser("Bad User")) }},
		{entry: "sandbox.Sandbox.CreateUser", field: "name", call: func(f *inputFixture) error { return ignore(f.sb.CreateUser(f.ctx, "")) }},
		{entry: "sandbox.Sandbox.CreateGroup", field: "name", call: func(f *inputFixture) error { return ignore(f.sb.CreateGroup(f.ctx, long)) }},
		{entry: "sandbox.User.AddToGroup", field: "group", call: func(f *inputFixture) error {
			u, err := f.sb.AsUser("u")
			if err != nil {
				return err
			}
			return u.AddToGroup(f.ctx, "-g")
		}},
		{entry: "sandbox.User.RemoveFromGroup", field: "group", call: func(f *inputFixture) error {
			u, err := f.sb.AsUser("u")
			if err != nil {
				return err
			}
			return u.RemoveFromGroup(f.ctx, "")
		}},
		{entry: "sandbox.FileSystem.WriteFiles", field: "entries[0]", call: func(f *inputFixture) error {
			return f.sb.FS().WriteFiles(f.ctx, []files.Entry{{}}, files.WriteParams{})
		}},
		{entry: "sandbox.FileSystem.DownloadFile", field: "localPath", call: func(f *inputFixture) error {
			return ignore(f.sb.FS().DownloadFile(f.ctx, "a", "", sandbox.DownloadParams{}))
		}},
		{entry: "sandbox.FileSystem.Chmod", field: "mode", call: func(f *inputFixture) error { return f.sb.FS().Chmod(f.ctx, "a", fs.ModeDir) }},
		{entry: "sandbox.FileSystem.WriteFile", field: "perm", call: func(f *inputFixture) error {
			return f.sb.FS().WriteFile(f.ctx, "a", nil, fs.ModeDir|0o644)
		}},
		{entry: "sandbox.FileSystem.Mkdir", field: "perm", call: func(f *inputFixture) error { return f.sb.FS().Mkdir(f.ctx, "a", fs.ModeDir|0o755) }},
		{entry: "sandbox.FileSystem.MkdirAll", field: "perm", call: func(f *inputFixture) error {
			return f.user.FS().MkdirAll(f.ctx, "a", fs.ModeSymlink)
		}},
		{entry: "sandbox.FileSystem.Chown", field: "uid", call: func(f *inputFixture) error { return f.sb.FS().Chown(f.ctx, "a", -2, 0) }},
		{entry: "sandbox.FileSystem.MkdirTemp", field: "pattern", call: func(f *inputFixture) error {
			return ignore(f.sb.FS().MkdirTemp(f.ctx, "", "a/b"))
		}},
		{entry: "sandbox.FileSystem.MkdirTemp", field: "dir", call: func(f *inputFixture) error {
			return ignore(f.sb.FS().MkdirTemp(f.ctx, nul, "x"))
		}},
		{entry: "sandbox.FileSystem.DirFS", field: "dir", call: func(f *inputFixture) error {
			return ignore(fs.ReadFile(f.sb.FS().DirFS(f.ctx, ""), "a"))
		}},
		{entry: "sandbox.FileSystem.Rename", field: "newpath", call: func(f *inputFixture) error { return f.sb.FS().Rename(f.ctx, "a", "") }},
		{entry: "sandbox.FileSystem.Symlink", field: "oldname", call: func(f *inputFixture) error { return f.sb.FS().Symlink(f.ctx, "", "b") }},
		{entry: "sandbox.Drive.Mount", field: "Mounts", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Mounts: map[string]sandbox.Mount{"/data": sandbox.Drive{}.Mount()}}))
		}},
		{entry: "sandbox.Drive.SnapshotMount", field: "Mounts", call: func(f *inputFixture) error {
			return ignore(f.c.Create(f.ctx, sandbox.CreateParams{Mounts: map[string]sandbox.Mount{"/data": sandbox.Drive{}.SnapshotMount()}}))
		}},

		// User.
		{entry: "sandbox.User.Command", field: "Cmd.Name", call: func(f *inputFixture) error {
			return ignore(f.user.Command("").Run(f.ctx))
		}},
		{entry: "sandbox.FileSystem.WriteFiles", field: "entries[0]", call: func(f *inputFixture) error {
			return f.user.FS().WriteFiles(f.ctx, []files.Entry{{}}, files.WriteParams{})
		}},
		{entry: "sandbox.FileSystem.Chmod", field: "mode", call: func(f *inputFixture) error { return f.user.FS().Chmod(f.ctx, "a", fs.ModeSymlink) }},
		{entry: "sandbox.FileSystem.Chown", field: "uid", call: func(f *inputFixture) error { return f.user.FS().Chown(f.ctx, "a", 0, -3) }},
		{entry: "sandbox.FileSystem.MkdirTemp", field: "pattern", call: func(f *inputFixture) error {
			return ignore(f.user.FS().MkdirTemp(f.ctx, "", nul))
		}},
		{entry: "sandbox.FileSystem.DirFS", field: "dir", call: func(f *inputFixture) error {
			return ignore(fs.ReadFile(f.user.FS().DirFS(f.ctx, nul), "a"))
		}},
		{entry: "sandbox.FileSystem.Rename", field: "newpath", call: func(f *inputFixture) error { return f.user.FS().Rename(f.ctx, "a", "") }},
		{entry: "sandbox.FileSystem.Symlink", field: "oldname", call: func(f *inputFixture) error { return f.user.FS().Symlink(f.ctx, nul, "b") }},
	}
	// The calls that take one sandbox path, for a Sandbox and a User.
	type pathCall struct {
		name string
		file bool // the path must name a file
		sb   func(f *inputFixture, p string) error
		user func(f *inputFixture, p string) error
	}
	for _, pc := range []pathCall{
		{"WriteFile", true, func(f *inputFixture, p string) error { return f.sb.FS().WriteFile(f.ctx, p, nil, 0o644) },
			func(f *inputFixture, p string) error { return f.user.FS().WriteFile(f.ctx, p, nil, 0o644) }},
		{"Open", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().Open(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().Open(f.ctx, p)) }},
		{"ReadFile", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().ReadFile(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().ReadFile(f.ctx, p)) }},
		{"Stat", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().Stat(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().Stat(f.ctx, p)) }},
		{"Lstat", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().Lstat(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().Lstat(f.ctx, p)) }},
		{"ReadDir", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().ReadDir(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().ReadDir(f.ctx, p)) }},
		{"Readlink", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().Readlink(f.ctx, p)) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().Readlink(f.ctx, p)) }},
		{"Remove", false, func(f *inputFixture, p string) error { return f.sb.FS().Remove(f.ctx, p) },
			func(f *inputFixture, p string) error { return f.user.FS().Remove(f.ctx, p) }},
		{"RemoveAll", false, func(f *inputFixture, p string) error { return f.sb.FS().RemoveAll(f.ctx, p) },
			func(f *inputFixture, p string) error { return f.user.FS().RemoveAll(f.ctx, p) }},
		{"Rename", false, func(f *inputFixture, p string) error { return f.sb.FS().Rename(f.ctx, p, "b") },
			func(f *inputFixture, p string) error { return f.user.FS().Rename(f.ctx, p, "b") }},
		{"Symlink", false, func(f *inputFixture, p string) error { return f.sb.FS().Symlink(f.ctx, "a", p) },
			func(f *inputFixture, p string) error { return f.user.FS().Symlink(f.ctx, "a", p) }},
		{"Chmod", false, func(f *inputFixture, p string) error { return f.sb.FS().Chmod(f.ctx, p, 0o644) },
			func(f *inputFixture, p string) error { return f.user.FS().Chmod(f.ctx, p, 0o644) }},
		{"Chown", false, func(f *inputFixture, p string) error { return f.sb.FS().Chown(f.ctx, p, 0, 0) },
			func(f *inputFixture, p string) error { return f.user.FS().Chown(f.ctx, p, 0, 0) }},
	} {
		cs = append(cs, pathCases("sandbox.FileSystem."+pc.name, "name", pc.file, pc.sb)...)
		cs = append(cs, pathCases("sandbox.FileSystem."+pc.name, "name", pc.file, pc.user)...)
	}
	// The second path of the calls that take two, and the other text they
	// send as arguments.
	for _, pc := range []pathCall{
		{"Rename", false, func(f *inputFixture, p string) error { return f.sb.FS().Rename(f.ctx, "a", p) },
			func(f *inputFixture, p string) error { return f.user.FS().Rename(f.ctx, "a", p) }},
		{"Symlink", false, func(f *inputFixture, p string) error { return f.sb.FS().Symlink(f.ctx, p, "b") },
			func(f *inputFixture, p string) error { return f.user.FS().Symlink(f.ctx, p, "b") }},
		{"MkdirTemp", false, func(f *inputFixture, p string) error { return ignore(f.sb.FS().MkdirTemp(f.ctx, p, "x")) },
			func(f *inputFixture, p string) error { return ignore(f.user.FS().MkdirTemp(f.ctx, p, "x")) }},
		{"DirFS", false, func(f *inputFixture, p string) error { return ignore(fs.ReadFile(f.sb.FS().DirFS(f.ctx, p), "a")) },
			func(f *inputFixture, p string) error { return ignore(fs.ReadFile(f.user.FS().DirFS(f.ctx, p), "a")) }},
	} {
		field := map[string]string{"Rename": "newpath", "Symlink": "oldname", "MkdirTemp": "dir", "DirFS": "dir"}[pc.name]
		cs = append(cs, inputCase{entry: "sandbox.FileSystem." + pc.name, field: field, call: func(f *inputFixture) error { return pc.sb(f, badUTF8) }},
			inputCase{entry: "sandbox.FileSystem." + pc.name, field: field, call: func(f *inputFixture) error { return pc.user(f, badUTF8) }})
	}
	cs = append(cs,
		inputCase{entry: "sandbox.FileSystem.MkdirTemp", field: "pattern", call: func(f *inputFixture) error {
			return ignore(f.sb.FS().MkdirTemp(f.ctx, "", "\xff*"))
		}},
		// An fs.FS name is valid UTF-8 by the fs.FS contract (fs.ValidPath).
		inputCase{entry: "sandbox.FileSystem.DirFS", is: fs.ErrInvalid, call: func(f *inputFixture) error {
			return ignore(fs.ReadFile(f.sb.FS().DirFS(f.ctx, "/d"), "\xff"))
		}},
		inputCase{entry: "sandbox.FileSystem.DirFS", is: fs.ErrInvalid, call: func(f *inputFixture) error {
			return ignore(fs.ReadDir(f.sb.FS().DirFS(f.ctx, "/d"), "\xff"))
		}},
		inputCase{entry: "sandbox.FileSystem.WriteFiles", field: "entries[0].Path", call: func(f *inputFixture) error {
			return f.sb.FS().WriteFiles(f.ctx, []files.Entry{files.FromBytes(badUTF8, []byte(""))}, files.WriteParams{})
		}},
	)
	// Every text of a command travels as JSON.
	for _, bc := range badCmds() {
		cs = append(cs,
			inputCase{entry: "command.Cmd.Run", field: bc.field, call: func(f *inputFixture) error { return ignore(bc.cmd(f.sb.Command).Run(f.ctx)) }},
			inputCase{entry: "command.Cmd.Output", field: bc.field, call: func(f *inputFixture) error { return ignore(bc.cmd(f.sb.Command).Output(f.ctx)) }},
			inputCase{entry: "command.Cmd.CombinedOutput", field: bc.field, call: func(f *inputFixture) error {
				return ignore(bc.cmd(f.sb.Command).CombinedOutput(f.ctx))
			}},
			inputCase{entry: "command.Cmd.Start", field: bc.field, call: func(f *inputFixture) error { return ignore(bc.cmd(f.sb.Command).Start(f.ctx)) }},
			inputCase{entry: "sandbox.User.Command", field: bc.field, call: func(f *inputFixture) error { return ignore(bc.cmd(f.user.Command).Run(f.ctx)) }},
		)
	}
	cs = append(cs, pathCases("sandbox.FileSystem.Walk", "root", false, func(f *inputFixture, p string) error { return errOf(f.sb.FS().Walk(f.ctx, p)) })...)
	cs = append(cs, pathCases("sandbox.FileSystem.Walk", "root", false, func(f *inputFixture, p string) error { return errOf(f.user.FS().Walk(f.ctx, p)) })...)
	cs = append(cs, pathCases("sandbox.FileSystem.Mkdir", "name", false, func(f *inputFixture, p string) error { return f.user.FS().Mkdir(f.ctx, p, 0o700) })...)
	cs = append(cs, pathCases("sandbox.FileSystem.Mkdir", "name", false, func(f *inputFixture, p string) error { return f.sb.FS().Mkdir(f.ctx, p, 0o755) })...)
	cs = append(cs, pathCases("sandbox.FileSystem.MkdirAll", "name", false, func(f *inputFixture, p string) error { return f.sb.FS().MkdirAll(f.ctx, p, 0o755) })...)
	cs = append(cs, pathCases("sandbox.FileSystem.DownloadFile", "name", false, func(f *inputFixture, p string) error {
		return ignore(f.sb.FS().DownloadFile(f.ctx, p, "/nonexistent/x", sandbox.DownloadParams{}))
	})...)
	return cs
}

func ignore3[A, B any](_ A, _ B, err error) error { return err }

// badCmd is a command with one text that JSON cannot carry, and the
// field the refusal names. cmd makes it with mk (Sandbox.Command, or
// bareCmd).
type badCmd struct {
	field string
	cmd   func(mk func(string, ...string) *command.Cmd) *command.Cmd
}

// bareCmd makes a Cmd bound to no sandbox, which only validates.
func bareCmd(name string, args ...string) *command.Cmd { return &command.Cmd{Name: name, Args: args} }

func badCmds() []badCmd {
	with := func(c *command.Cmd, set func(*command.Cmd)) *command.Cmd {
		set(c)
		return c
	}
	return []badCmd{
		{"Cmd.Name", func(mk func(string, ...string) *command.Cmd) *command.Cmd { return mk("ls\xff") }},
		{"Cmd.Args[1]", func(mk func(string, ...string) *command.Cmd) *command.Cmd { return mk("rm", "--", badUTF8) }},
		{"Cmd.Env", func(mk func(string, ...string) *command.Cmd) *command.Cmd {
			return with(mk("env"), func(c *command.Cmd) { c.Env = map[string]string{"K\xff": "v"} })
		}},
		{"Cmd.Env[K]", func(mk func(string, ...string) *command.Cmd) *command.Cmd {
			return with(mk("env"), func(c *command.Cmd) { c.Env = map[string]string{"K": "\xff"} })
		}},
		{"Cmd.Dir", func(mk func(string, ...string) *command.Cmd) *command.Cmd {
			return with(mk("pwd"), func(c *command.Cmd) { c.Dir = "/tmp/\xff" })
		}},
	}
}
