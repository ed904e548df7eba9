package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
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
		{"Remove", func() error { return sb.Remove(ctx, bad) }},
		{"RemoveAll", func() error { return sb.RemoveAll(ctx, bad) }},
		{"Rename", func() error { return sb.Rename(ctx, bad, dir+"/moved") }},
		{"Rename onto", func() error { return sb.Rename(ctx, dir+"/u", bad) }},
		{"WriteFile", func() error { return sb.WriteFile(ctx, bad, []byte("lost")) }},
		{"WriteFiles", func() error {
			return sb.WriteFiles(ctx, []files.Entry{files.FromString("ok", "x"), files.FromString(bad, "lost")})
		}},
		{"AppendFile", func() error { return sb.AppendFile(ctx, bad, []byte("more")) }},
		{"Chmod", func() error { return sb.Chmod(ctx, bad, 0) }},
		{"MkDir", func() error { return sb.MkDir(ctx, bad+"/d") }},
		{"Run", func() error {
			_, err := sb.Run(ctx, &command.Cmd{Name: "rm", Args: []string{"--", bad}})
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
// of any name runs as itself, as it does through Sandbox.Run; so does a
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
			cmd := &command.Cmd{Name: n, Args: []string{"x", "-y"}, Env: env, Dir: sb.Cwd()}
			out, err := sb.Output(ctx, cmd)
			require.NoError(t, err, "Sandbox.Output %q", n)
			require.Equal(t, want, string(out), "Sandbox.Output %q", n)
			out, err = alice.Output(ctx, cmd)
			assert.NoError(t, err, "User.Output %q with env %v", n, env)
			assert.Equal(t, want, string(out), "User.Output %q with env %v: the program of that name ran", n, env)
		}
	}

	require.NoError(t, os.Mkdir(filepath.Join(sb.Cwd(), "-"), 0o755))
	out, err := alice.Output(ctx, &command.Cmd{Name: "pwd", Dir: "-"})
	require.NoError(t, err, "a directory named -")
	require.Equal(t, filepath.Join(sb.Cwd(), "-")+"\n", string(out))
}

// writeScript writes an executable shell script.
func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
}
