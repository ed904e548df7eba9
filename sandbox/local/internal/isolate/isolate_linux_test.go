package isolate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgs(t *testing.T) {
	e := &Engine{path: "bwrap", disableUserns: true}
	spec := &Spec{Path: "/usr/bin/true", Cwd: "/vercel/sandbox", Writable: []Mount{{Host: "/h/vercel", Path: "/vercel"}}}
	st := staged{dir: "/s/etc", names: []string{"resolv.conf", "ssl/certs"}}
	a := strings.Join(e.args(spec, []etcFile{{hostsAt, hostsData("box")}}, st), " ")
	for _, want := range []string{"--ro-bind /s/etc /etc", "--file 6 " + hostsAt, "--proc /proc --ro-bind-try /proc/sys /proc/sys", "--ro-bind-try /proc/irq /proc/irq", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop ALL",
		"--disable-userns", "--uid 1000", "--bind /h/vercel /vercel", "--remount-ro / --chdir /vercel/sandbox", "-- /usr/bin/true"} {
		assert.Contains(t, a, want)
	}
	assert.NotContains(t, a, "--share-net", "loopback only by default")
	assert.NotContains(t, a, "/etc/ssl/private", "host keys stay out")
	assert.NotContains(t, a, "--symlink "+stagedEtc, "the stage is /etc, one mount and nothing per file")
	spec.Network, spec.Root = true, true
	a = strings.Join(e.args(spec, nil, st), " ")
	assert.Contains(t, a, "--share-net")
	assert.Contains(t, a, "--uid 0")
}

func TestLookPathStaysInTheTree(t *testing.T) {
	tree, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "sandbox", "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "sandbox", "bin", "app"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(tree, "sandbox", "lnk")))
	spec := &Spec{Name: "bin/app", Cwd: "/vercel/sandbox", Writable: []Mount{{Host: tree, Path: "/vercel"}}}
	code, msg := spec.LookPath("/usr/bin")
	require.Zero(t, code, msg)
	assert.Equal(t, "/vercel/sandbox/bin/app", spec.Path)

	spec.Name = "lnk/tool"
	code, _ = spec.LookPath("/usr/bin")
	assert.Equal(t, 127, code, "a link out of the tree is not followed")

	spec.Name = "sh"
	code, _ = spec.LookPath("/usr/bin:/bin")
	require.Zero(t, code)
	assert.True(t, strings.HasSuffix(spec.Path, "/sh"))
}

func TestSeccompFilter(t *testing.T) {
	prog := seccompFilter()
	require.NotEmpty(t, prog)
	assert.Zero(t, len(prog)%8, "bwrap reads whole sock_filter records")
	if auditArch != 0 {
		last := buildFilter()
		assert.Equal(t, sockFilter{code: bpfRetK, k: retAllow}, last[len(last)-1], "what no rule refuses is allowed")
		assert.True(t, slices.ContainsFunc(last, func(f sockFilter) bool { return f.k == setidBits }))
	}
}

func TestArgsWithUsers(t *testing.T) {
	e := &Engine{path: "bwrap", users: &users{setpriv: "/usr/bin/setpriv", base: idBase}}
	spec := &Spec{Path: "/usr/bin/id", Cwd: "/", Etc: "/h/etc"}
	a := strings.Join(e.args(spec, nil, staged{dir: "/s/etc", names: []string{"resolv.conf"}}), " ")
	for _, want := range []string{"--userns 5", "--unshare-net", "--uid 1000", "--bind /h/etc /etc",
		"--ro-bind /s/etc " + stagedEtc, "--block-fd 5", "--cap-drop ALL", "-- /usr/bin/id"} {
		assert.Contains(t, a, want)
	}
	assert.NotContains(t, a, "--unshare-user", "the engine's namespace is joined")
	assert.NotContains(t, a, "--cap-add", "the default user holds no capability")
	assert.NotContains(t, a, "/etc/passwd", "the sandbox keeps its own accounts")
	assert.NotContains(t, a, "--symlink "+stagedEtc, "its own /etc links to the stage")

	spec.Root = true
	a = strings.Join(e.args(spec, nil, staged{}), " ")
	assert.Contains(t, a, "--cap-add CAP_CHOWN")
	assert.Contains(t, a, "-- /usr/bin/setpriv --reuid 0 --regid 0 --init-groups -- /usr/bin/id")

	spec.As = &Account{UID: 1001, GID: 1001}
	a = strings.Join(e.args(spec, nil, staged{}), " ")
	assert.Contains(t, a, "--reuid 1001 --regid 1001 --init-groups --inh-caps=-all --ambient-caps=-all -- /usr/bin/id")
	assert.Equal(t, idBase+1001, e.HostID(1001))
	assert.Equal(t, -1, (&Engine{}).HostID(1001), "one id without users")
}
