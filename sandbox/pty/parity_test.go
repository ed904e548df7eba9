//go:build unix

package pty_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// sameAsACommand is what a command shows of its sandbox: its user and the
// sandbox's users, its environment (but for what a shell or a terminal
// adds, and the executor's mark of each command), working directory and
// limits.
const sameAsACommand = `id; echo "HOME=$HOME USER=$USER"; pwd; ulimit -a
cut -d: -f1,3,6 /etc/passwd | LC_ALL=C sort
env | grep -v -e '^TERM=' -e '^PWD=' -e '^OLDPWD=' -e '^SHLVL=' -e '^_=' -e '^LOCAL_SANDBOX_RUN=' | LC_ALL=C sort`

// assertTerminalIsACommand runs sameAsACommand as a command of sb and on
// a terminal of sb: they must see the very same sandbox.
func assertTerminalIsACommand(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	cmd := sb.Command("sh", "-c", sameAsACommand)
	cmd.Env = map[string]string{"GREETING": "hello", "TERM": "xterm-256color"}
	want, err := cmd.Output(t.Context())
	require.NoError(t, err)

	scr := newScreen()
	code, err := pty.Run(t.Context(), sb, &pty.Cmd{
		Name: "sh", Args: []string{"-c", sameAsACommand},
		Env: map[string]string{"GREETING": "hello"}, Stdout: scr,
	})
	require.NoError(t, err)
	require.Zero(t, code, scr.String())
	assert.Equal(t, string(want), strings.ReplaceAll(scr.String(), "\r\n", "\n"))
}

// On the host executor, in a sandbox made from an image under hosted
// rules (HOME is /vercel there).
func TestTerminalIsACommand(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Image: "node:22"})
	require.NoError(t, err)
	assertTerminalIsACommand(t, sb)
}

// A terminal's working directory through a link planted in the sandbox
// is refused, as a command's is: no directory is made on the host.
func TestTerminalCwdThroughPlantedLink(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "links"})
	require.NoError(t, err)
	outside := t.TempDir()
	lnk, err := srv.HostPath("links", "lnk")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(outside, lnk))

	cwd := filepath.Join(sb.Cwd(), "lnk", "x", "y")
	cmd := sb.Command("pwd")
	cmd.Dir = cwd
	_, err = cmd.Output(t.Context())
	require.Error(t, err, "a command there is refused")
	require.NoDirExists(t, filepath.Join(outside, "x"))

	_, err = pty.Run(t.Context(), sb, &pty.Cmd{Name: "pwd", Cwd: cwd})
	assert.ErrorContains(t, err, "Invalid cwd", "so is a terminal, with the reason")
	assert.NoDirExists(t, filepath.Join(outside, "x"), "no host directory made through the link")
}
