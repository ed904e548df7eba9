package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
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
