package isolate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStageFollowsTheHost(t *testing.T) {
	src := t.TempDir()
	write := func(name, data string, age time.Duration) {
		p := filepath.Join(src, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p+".tmp", []byte(data), 0o644))
		require.NoError(t, os.Rename(p+".tmp", p))
		when := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(p, when, when))
	}
	write("resolv.conf", "nameserver 10.0.0.1\n", time.Hour)
	write("ssl/certs/ca.pem", "CA\n", time.Hour)
	require.NoError(t, os.Symlink("/usr/share/zoneinfo/UTC", filepath.Join(src, "localtime")))
	run := t.TempDir() // a host directory that sandboxes do not see
	require.NoError(t, os.WriteFile(filepath.Join(run, "stub-resolv.conf"), []byte("nameserver 127.0.0.53\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(run, "stub-resolv.conf"), filepath.Join(src, "nsswitch.conf")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(src, "ssl/certs/fifo"), 0o644))

	s := &stage{src: src}
	t.Cleanup(s.close)
	dir, names, err := s.refresh()
	require.NoError(t, err)
	assert.Equal(t, []string{"resolv.conf", "nsswitch.conf", "localtime", "ssl/certs"}, names, "what the host has, in etcPaths order")
	read := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		return string(data)
	}
	assert.Equal(t, "nameserver 10.0.0.1\n", read("resolv.conf"))
	assert.Equal(t, "CA\n", read("ssl/certs/ca.pem"))
	target, err := os.Readlink(filepath.Join(dir, "localtime"))
	require.NoError(t, err)
	assert.Equal(t, "/usr/share/zoneinfo/UTC", target, "a link into /usr stays a link")
	assert.Equal(t, "nameserver 127.0.0.53\n", read("nsswitch.conf"), "a link to what sandboxes do not see is copied")
	fi, err := os.Lstat(filepath.Join(dir, "nsswitch.conf"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular())
	assert.NoFileExists(t, filepath.Join(dir, "ssl/certs/fifo"), "only files, links and directories are copied")
	fi, err = os.Stat(filepath.Dir(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "no other host user reaches the stage")

	// The host replaces its files: the stage follows, in place.
	write("resolv.conf", "nameserver 10.0.0.2\n", 0)
	require.NoError(t, os.RemoveAll(filepath.Join(src, "localtime")))
	again, names, err := s.refresh()
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	assert.Equal(t, []string{"resolv.conf", "nsswitch.conf", "ssl/certs"}, names)
	assert.Equal(t, "nameserver 10.0.0.2\n", read("resolv.conf"))
	assert.NoFileExists(t, filepath.Join(dir, "localtime"))

	require.NoError(t, os.RemoveAll(filepath.Dir(dir)))
	dir, _, err = s.refresh()
	require.NoError(t, err)
	assert.Equal(t, "nameserver 10.0.0.2\n", read("resolv.conf"), "made again when removed under the server")
	// The files every sandbox without its own /etc shares.
	assert.Contains(t, read("passwd"), DefaultUser+":x:1000:1000:")
	assert.Contains(t, read("group"), DefaultUser+":x:1000:")
	for name, want := range map[string]string{"hostname": "/proc/sys/kernel/hostname", "hosts": hostsAt} {
		target, err := os.Readlink(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, target, name)
	}

	s.close()
	assert.NoDirExists(t, filepath.Dir(dir), "closed, the stage is gone")
}

func TestStaleStagesRemoved(t *testing.T) {
	dead := exitedPid(t)
	stale, err := os.MkdirTemp(stageRoot(), stagePrefix+strconv.Itoa(dead)+"-")
	require.NoError(t, err)
	mine, err := os.MkdirTemp(stageRoot(), stagePrefix+strconv.Itoa(os.Getpid())+"-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(mine) })
	removeStaleStages()
	assert.NoDirExists(t, stale, "the stage of a server that ended")
	assert.DirExists(t, mine, "this server's own")
}

// exitedPid returns the pid of a process that has ended.
func exitedPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	require.NoError(t, c.Run())
	return c.Process.Pid
}

func TestStageComparedAtMostEvery(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(src, "host.conf"), []byte("one\n"), 0o644))
	s := &stage{src: src, every: time.Hour}
	t.Cleanup(s.close)
	dir, names, err := s.refresh()
	require.NoError(t, err)
	require.Equal(t, []string{"host.conf"}, names)
	require.NoError(t, os.WriteFile(filepath.Join(src, "host.conf"), []byte("two, a longer file\n"), 0o644))
	_, again, err := s.refresh()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "host.conf"))
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(data), "within the interval the stage is not compared")
	assert.Equal(t, names, again)
}
