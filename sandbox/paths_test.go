package sandbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A path travels as JSON text, and encoding/json sends each byte of
// invalid UTF-8 as U+FFFD: Remove("u/\xffx") removed "u/\uFFFDx", another
// file. Every call refuses such a path before any request, so the file
// the rewritten path names is never touched.
func TestInvalidUTF8PathIsRefusedNotRewritten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newLocalEnv(t)
	sb := e.create("")
	dir := sb.Cwd()
	victim := filepath.Join(dir, "u", "\uFFFDx")
	require.NoError(t, os.MkdirAll(filepath.Dir(victim), 0o755))
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	bad := dir + "/u/\xffx"

	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Remove", func() error { return sb.FS().Remove(ctx, bad) }},
		{"RemoveAll", func() error { return sb.FS().RemoveAll(ctx, bad) }},
		{"Rename", func() error { return sb.FS().Rename(ctx, bad, dir+"/moved") }},
		{"Rename onto", func() error { return sb.FS().Rename(ctx, dir+"/u", bad) }},
		{"WriteFile", func() error { return sb.FS().WriteFile(ctx, bad, []byte("lost"), 0o644) }},
		{"WriteFiles", func() error {
			return sb.FS().WriteFiles(ctx, []files.Entry{files.FromBytes("ok", []byte("x")), files.FromBytes(bad, []byte("lost"))}, files.WriteParams{})
		}},
		{"Chmod", func() error { return sb.FS().Chmod(ctx, bad, 0) }},
		{"Mkdir", func() error { return sb.FS().Mkdir(ctx, bad+"/d", 0o755) }},
		{"Mkdir 0o700", func() error { return sb.FS().Mkdir(ctx, bad+"/d", 0o700) }},
		{"Run", func() error {
			_, err := sb.Command("rm", "--", bad).Run(ctx)
			return err
		}},
	} {
		name, call := c.name, c.call
		before := len(e.srv.Requests())
		err := call()
		var ie *sandbox.InputError
		require.ErrorAs(t, err, &ie, "%s refuses the path: %v", name, err)
		require.Len(t, e.srv.Requests(), before, "%s sent nothing", name)
		data, err := os.ReadFile(victim)
		require.NoError(t, err, "%s left the file the rewritten path names", name)
		require.Equal(t, "keep", string(data), name)
	}
	_, err := os.Stat(filepath.Join(dir, "ok"))
	require.ErrorIs(t, err, os.ErrNotExist, "an upload with one such path is refused whole")
}

// User runs a command through sudo -u, a script that enters its
// directory, and env(1) for its variables. Each read some names as its
// own: "-a" and "-c" were options of bash's exec, "--help" printed exec's
// help, and with Env set "X=1" was one more variable for env. A command
// of any name runs as itself, as it does through Sandbox.Command; so does a
// directory named "-" (cd's previous directory).
func TestUserRunsTheProgramOfThatName(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	bin := t.TempDir()
	// This sudo stays the host's user: the test is about what sudo runs.
	writeScript(t, bin, "sudo", `[ "$1" = -u ] && shift 2; [ "$1" = -- ] && shift; exec "$@"`)
	names := []string{"-a", "-c", "X=1", "--help", "-", "-u", "=x"}
	for _, n := range names {
		writeScript(t, bin, n, `echo "ran ${0##*/} K=${K-unset} $*"`)
	}
	e := newLocalEnv(t, local.WithExecutor(hostexec.New(hostexec.Path(bin+":"+os.Getenv("PATH")))))
	sb := e.create("")
	alice, err := sb.AsUser("alice")
	require.NoError(t, err)
	for _, n := range names {
		// A PATH of the command's own finds the program, and nothing else.
		for _, env := range []map[string]string{nil, {"K": "v"}, {"K": "v", "PATH": bin}} {
			k := "unset"
			if env != nil {
				k = "v"
			}
			want := "ran " + n + " K=" + k + " x -y\n"
			cmd := sb.Command(n, "x", "-y")
			cmd.Env, cmd.Dir = env, sb.Cwd()
			out, err := cmd.Output(ctx)
			require.NoError(t, err, "Sandbox.Output %q", n)
			require.Equal(t, want, string(out), "Sandbox.Output %q", n)
			cmd = alice.Command(n, "x", "-y")
			cmd.Env, cmd.Dir = env, sb.Cwd()
			out, err = cmd.Output(ctx)
			assert.NoError(t, err, "User.Output %q with env %v", n, env)
			assert.Equal(t, want, string(out), "User.Output %q with env %v: the program of that name ran", n, env)
		}
	}

	require.NoError(t, os.Mkdir(filepath.Join(sb.Cwd(), "-"), 0o755))
	cmd2 := alice.Command("pwd")
	cmd2.Dir = "-"
	out, err := cmd2.Output(ctx)
	require.NoError(t, err, "a directory named -")
	require.Equal(t, filepath.Join(sb.Cwd(), "-")+"\n", string(out))
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
}

// record is one entry of a listing in the format the file calls ask find
// for (findFormat): type, type after links, mode, size, uid, gid, user,
// group, links, inode, three times, link target, path below the starting
// point, name.
func record(typ, rel, name string) string {
	return strings.Join([]string{typ, typ, "755", "0", "0", "0", "root", "root", "1", "1",
		"1.0", "1.0", "1.0", "", rel, name}, "\x00") + "\x00"
}

// listingEnv is a sandbox whose find prints what set says.
func listingEnv(t *testing.T) (sb *sandbox.Sandbox, set func(listing string)) {
	t.Helper()
	e := newEnv(t)
	remove := func() {}
	return e.create(""), func(listing string) {
		remove()
		remove = e.script.Override(sandboxtest.MatchName("find"), sandboxtest.Reply{Stdout: listing})
	}
}

// listingCalls are the calls that list /d, each returning its error.
func listingCalls(t *testing.T, sb *sandbox.Sandbox) map[string]func() error {
	ctx := t.Context()
	fsys := sb.FS().DirFS(ctx, "/d")
	return map[string]func() error{
		"ReadDir":       func() error { _, err := sb.FS().ReadDir(ctx, "/d"); return err },
		"DirFS.ReadDir": func() error { _, err := fs.ReadDir(fsys, "."); return err },
		"Walk": func() error {
			for entry, err := range sb.FS().Walk(ctx, "/d") {
				if err != nil {
					return err
				}
				t.Errorf("Walk yielded %q", entry.Path)
			}
			return nil
		},
		"fs.WalkDir": func() error {
			root := true
			return fs.WalkDir(fsys, ".", func(p string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if !root {
					// A forged "." would walk "." for ever.
					t.Errorf("fs.WalkDir reached %q", p)
					return fs.SkipAll
				}
				root = false
				return nil
			})
		},
	}
}

// A sandbox runs hostile code, so the listings it prints are hostile
// input: a forged record whose name is not one path element led
// fs.WalkDir out of the directory it walked ("../../../../home/user/.ssh").
// Every call that lists refuses such a listing whole, with a
// *ListingError, and returns none of it.
func TestForgedListingIsRefused(t *testing.T) {
	t.Parallel()
	sb, set := listingEnv(t)
	start := record("d", "", "d")
	escape := "../../../../home/user/.ssh"
	cases := map[string]string{
		"escaping name":             start + record("d", escape, escape),
		"escaping path":             start + record("d", "x/"+escape, ".ssh"),
		"name with a slash":         start + record("f", "a/b", "a/b"),
		"dot-dot":                   start + record("d", "..", ".."),
		"dot":                       start + record("d", ".", "."),
		"empty name":                start + record("f", "e", ""),
		"name not its path's last":  start + record("f", "a", "b"),
		"a second starting point":   start + record("d", "", escape),
		"absolute path":             start + record("f", "/etc/passwd", "passwd"),
		"empty element":             start + record("f", "x//y", "y"),
		"below no listed directory": start + record("f", "nodir/f", "f"),
		"twice the same entry":      start + record("f", "a", "a") + record("f", "a", "a"),
		"no starting point":         record("f", "a", "a"),
		"a cut record":              start + "f\x00f\x00",
	}
	for what, listing := range cases {
		set(listing)
		for call, fn := range listingCalls(t, sb) {
			err := fn()
			var le *sandbox.ListingError
			assert.ErrorAs(t, err, &le, "%s: %s refuses the listing", what, call)
			var pe *fs.PathError
			assert.ErrorAs(t, err, &pe, "%s: %s names the path", what, call)
		}
	}

	// ReadDir lists one level: a deeper record is forged there, and only
	// there.
	set(start + record("d", "a", "a") + record("f", "a/b", "b"))
	_, err := sb.FS().ReadDir(t.Context(), "/d")
	var le *sandbox.ListingError
	require.ErrorAs(t, err, &le, "a record below an entry, in a listing of one level")
	var walked []string
	for entry, err := range sb.FS().Walk(t.Context(), "/d") {
		require.NoError(t, err)
		walked = append(walked, entry.Path)
	}
	require.Equal(t, []string{"/d/a", "/d/a/b"}, walked, "the same records as a walk's")
}

// Stat's name is the last element of the path it was given, as with
// os.Stat, whatever name the sandbox prints for it.
func TestStatNamesThePathGiven(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, set := listingEnv(t)
	set(record("f", "", "../../../../home/user/.ssh"))
	fi, err := sb.FS().Stat(ctx, "/d/f")
	require.NoError(t, err)
	require.Equal(t, "f", fi.Name())
	fi, err = fs.Stat(sb.FS().DirFS(ctx, "/d"), "f")
	require.NoError(t, err)
	require.Equal(t, "f", fi.Name())
}
