package local_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// testQuota is the disk quota of the quota tests' sandboxes.
const testQuota = 32 << 20

// quotaBound is the most that the host may hold for one sandbox of quota
// q: the quota and the margin that WithDiskQuota documents.
func quotaBound(q int64) int64 { return q + q/16 + 1<<20 }

// quotaServer is a server holding testQuota per sandbox, on a directory
// of the test's, with its executor: the host's (host paths) or the
// isolated one.
type quotaServer struct {
	srv *sandboxtest.Server
	dir string
}

// quotaExecutors runs f once with each executor that runs real processes.
func quotaExecutors(t *testing.T, f func(t *testing.T, newServer func(...local.Option) quotaServer)) {
	t.Run("host", func(t *testing.T) {
		t.Parallel()
		f(t, func(opts ...local.Option) quotaServer {
			return newQuotaServer(t, append([]local.Option{local.WithExecutor(hostexec.New()), local.WithHostPaths(true)}, opts...)...)
		})
	})
	t.Run("isolated", func(t *testing.T) {
		t.Parallel()
		iso, err := isolated.New()
		if errors.Is(err, isolated.ErrUnavailable) {
			t.Skipf("SKIPPED: no isolation here: %v", err)
		}
		require.NoError(t, err)
		t.Cleanup(func() { _ = iso.Close() })
		f(t, func(opts ...local.Option) quotaServer {
			return newQuotaServer(t, append([]local.Option{local.WithExecutor(iso)}, opts...)...)
		})
	})
}

func newQuotaServer(t *testing.T, opts ...local.Option) quotaServer {
	t.Helper()
	dir := t.TempDir()
	srv := sandboxtest.NewServer(t, append([]local.Option{local.WithDir(dir), local.WithDiskQuota(testQuota)}, opts...)...)
	if held, why := srv.DiskQuotaHeld(); !held {
		t.Skipf("SKIPPED: the kernel cannot hold the disk quota here: %s", why)
	}
	return quotaServer{srv: srv, dir: dir}
}

// hostHeld returns the bytes that the files under dir take on the host's
// file system: a file system mounted under dir counts by what backs it on
// the host (its image, say), not by what it holds.
func hostHeld(dir string) int64 {
	var top syscall.Stat_t
	if syscall.Lstat(dir, &top) != nil {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while walking
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != top.Dev {
			return fs.SkipDir
		}
		n += st.Blocks * 512
		return nil
	})
	return n
}

// peakHeld measures hostHeld(dir) without pause until stop is called, and
// returns the most it saw, the last measure included.
func peakHeld(dir string) (stop func() int64) {
	var (
		mu   sync.Mutex
		peak int64
	)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			n := hostHeld(dir)
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-ended
		n := hostHeld(dir)
		mu.Lock()
		defer mu.Unlock()
		return max(peak, n)
	}
}

// heldBySandboxes is what the host holds for the sandboxes of a server on
// dir, its snapshots not counted.
func heldBySandboxes(dir string) int64 {
	return hostHeld(dir) - hostHeld(filepath.Join(dir, "snapshots"))
}

// runScript runs a bash script in sb with a deadline, a non-zero exit
// being no error.
func runScript(t *testing.T, sb *sandbox.Sandbox, script string) *command.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := sb.Command("bash", "-c", script).Run(ctx)
	var ee *command.ExitError
	if !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return res
}

func TestQuotaFallocateIsRefused(t *testing.T) {
	t.Parallel()
	quotaExecutors(t, func(t *testing.T, newServer func(...local.Option) quotaServer) {
		qs := newServer()
		sb, err := qs.srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "falloc"})
		require.NoError(t, err)
		stop := peakHeld(qs.dir)
		began := time.Now()
		res := runScript(t, sb, fmt.Sprintf("fallocate -l %d big", 4*testQuota))
		took := time.Since(began)
		peak := stop()
		assert.Equal(t, 1, res.ExitCode(), "fallocate fails as on a full disk; stderr: %s", res.Stderr)
		assert.Contains(t, string(res.Stderr), "No space left on device")
		assert.Less(t, took, 20*time.Second, "the command is refused at once")
		assert.LessOrEqual(t, peak, quotaBound(testQuota), "the host never holds more than the quota and its margin")
		t.Logf("host held at most %d KiB (quota %d KiB), refused in %v", peak>>10, testQuota>>10, took)
	})
}

func TestQuotaSparseFile(t *testing.T) {
	t.Parallel()
	quotaExecutors(t, func(t *testing.T, newServer func(...local.Option) quotaServer) {
		qs := newServer()
		sb, err := qs.srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "sparse"})
		require.NoError(t, err)
		stop := peakHeld(qs.dir)
		// A file of 32 times the quota, holes but for what the loop writes:
		// 1 MiB every 4 MiB, 128 MiB in all, until the disk is full.
		res := runScript(t, sb, fmt.Sprintf(`truncate -s %d sparse || exit 2
for i in $(seq 0 127); do dd if=/dev/zero of=sparse bs=1M count=1 seek=$((i*4)) conv=notrunc status=none || exit 9; done`, 32*testQuota))
		peak := stop()
		assert.Equal(t, 9, res.ExitCode(), "a write into the holes fails once the disk is full; stderr: %s", res.Stderr)
		assert.Contains(t, string(res.Stderr), "No space left on device")
		assert.LessOrEqual(t, peak, quotaBound(testQuota), "the host never holds more than the quota and its margin")
		size := runScript(t, sb, "stat -c %s sparse")
		assert.Equal(t, strconv.Itoa(32*testQuota), strings.TrimSpace(string(size.Stdout)), "the file keeps its length: holes take nothing")
	})
}

func TestQuotaTerminal(t *testing.T) {
	t.Parallel()
	quotaExecutors(t, func(t *testing.T, newServer func(...local.Option) quotaServer) {
		qs := newServer()
		sb, err := qs.srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "tty"})
		require.NoError(t, err)
		stop := peakHeld(qs.dir)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		var out bytes.Buffer
		code, err := pty.Run(ctx, sb, &pty.Cmd{
			Name:      "sh",
			Args:      []string{"-c", fmt.Sprintf("head -c %d /dev/zero > big; echo rc=$?", 8*testQuota)},
			KeepAlive: -1,
			Stdout:    &out,
		})
		peak := stop()
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.Contains(t, out.String(), "No space left on device")
		assert.Contains(t, out.String(), "rc=1")
		assert.LessOrEqual(t, peak, quotaBound(testQuota), "a terminal's command is held as any other")
	})
}

func TestQuotaSnapshotOfFullSandbox(t *testing.T) {
	t.Parallel()
	quotaExecutors(t, func(t *testing.T, newServer func(...local.Option) quotaServer) {
		qs := newServer()
		c := qs.srv.Client()
		sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "full"})
		require.NoError(t, err)
		stop := peakHeld(qs.dir)
		res := runScript(t, sb, fmt.Sprintf("head -c %d /dev/urandom > full; echo $?; cksum < full", 4*testQuota))
		assert.Contains(t, string(res.Stderr), "No space left on device")
		before := strings.Fields(string(res.Stdout))
		require.Len(t, before, 3, "%s", res.Stdout)
		snap, err := sb.Snapshot(t.Context(), sandbox.SnapshotParams{})
		require.NoError(t, err)

		from, err := c.Create(t.Context(), sandbox.CreateParams{Name: "restored", Source: sandbox.SnapshotSource(snap.ID)})
		require.NoError(t, err)
		res = runScript(t, from, "cksum < full")
		assert.Equal(t, before[1:], strings.Fields(string(res.Stdout)), "the full sandbox's files come back whole")
		res = runScript(t, from, fmt.Sprintf("head -c %d /dev/zero > more", 2*testQuota))
		assert.NotEqual(t, 0, res.ExitCode(), "the restored sandbox is as full as its source")
		_, err = sb.Resume(t.Context())
		require.NoError(t, err)
		res = runScript(t, sb, "cksum < full")
		assert.Equal(t, before[1:], strings.Fields(string(res.Stdout)), "the source resumes whole")
		assert.LessOrEqual(t, stopAndMeasure(stop, qs.dir), 2*quotaBound(testQuota), "two sandboxes: twice the bound at most, snapshots aside")
	})
}

// stopAndMeasure stops a peakHeld measure and returns what the sandboxes
// of the server on dir hold now, snapshots aside.
func stopAndMeasure(stop func() int64, dir string) int64 {
	stop()
	return heldBySandboxes(dir)
}

// mountsUnder lists the mount points under dir, and the loop devices
// whose backing file lies under dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			left = append(left, "mount "+fields[4])
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, bf := range files {
		b, err := os.ReadFile(bf)
		if err == nil && strings.HasPrefix(string(b), dir) {
			left = append(left, "loop device "+bf+": "+strings.TrimSpace(string(b)))
		}
	}
	return left
}

func TestQuotaLeavesNoMountOrLoopDevice(t *testing.T) {
	t.Parallel()
	quotaExecutors(t, func(t *testing.T, newServer func(...local.Option) quotaServer) {
		qs := newServer()
		c := qs.srv.Client()
		kept, err := c.Create(t.Context(), sandbox.CreateParams{Name: "kept"})
		require.NoError(t, err)
		runScript(t, kept, "echo kept > f")
		_, err = kept.Stop(t.Context())
		require.NoError(t, err)
		gone, err := c.Create(t.Context(), sandbox.CreateParams{Name: "gone"})
		require.NoError(t, err)
		runScript(t, gone, "echo gone > f; sleep 1000 &")
		require.NoError(t, gone.Delete(t.Context(), sandbox.DeleteParams{}))
		running, err := c.Create(t.Context(), sandbox.CreateParams{Name: "running"})
		require.NoError(t, err)
		_, err = running.Command("sleep", "1000").Start(t.Context())
		require.NoError(t, err)
		require.Len(t, mountsUnder(t, qs.dir), 4, "one mount and one loop device per sandbox not deleted")
		qs.srv.Close()
		assert.Empty(t, mountsUnder(t, qs.dir))
	})
}

// crashEnv names the directory in which TestQuotaCrashedServer's child
// serves, holding one sandbox's quota, until it is killed.
const crashEnv = "LOCAL_QUOTA_CRASH_DIR"

func TestQuotaCrashedServer(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		srv := sandboxtest.NewServer(t, local.WithDir(dir), local.WithDiskQuota(testQuota))
		_, err := srv.Client().Create(context.Background(), sandbox.CreateParams{Name: "orphan"})
		require.NoError(t, err)
		fmt.Println("ready")
		select {} // until killed
	}
	t.Parallel()
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestQuotaCrashedServer$")
	child.Env = append(os.Environ(), crashEnv+"="+dir)
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	child.Stderr = &stderr
	require.NoError(t, child.Start())
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	ok := false
	select {
	case ok = <-ready:
	case <-time.After(60 * time.Second):
	}
	_ = child.Process.Kill()
	_ = child.Wait() // stderr is complete once Wait returns
	require.True(t, ok, "the child was not ready: %s", stderr.String())
	if len(mountsUnder(t, dir)) == 0 {
		t.Skip("SKIPPED: the kernel cannot hold the disk quota here")
	}

	srv, err := local.New(local.WithDir(dir), local.WithDiskQuota(testQuota))
	require.NoError(t, err)
	assert.Empty(t, mountsUnder(t, dir), "a new server releases what a crashed one held")
	srv.Close()
}

func TestQuotaWatchedWhereNotHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := sandboxtest.NewServer(t, local.WithDir(dir), local.WithDiskQuota(testQuota), local.WithWatchedDiskQuota(),
		local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	held, why := srv.DiskQuotaHeld()
	require.False(t, held)
	assert.Contains(t, why, "watched")
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "watched"})
	require.NoError(t, err)
	res := runScript(t, sb, "while :; do head -c 4194304 /dev/zero >> big || exit 1; sleep 0.01; done")
	assert.Equal(t, 137, res.ExitCode(), "the watcher killed the command; stderr: %s", res.Stderr)
	assert.Contains(t, string(res.Stderr), "disk quota")
	assert.Empty(t, mountsUnder(t, dir), "nothing is mounted")
}

// quotaCostEnv, set to 1, runs TestQuotaCost, which measures what a held
// quota costs per sandbox (docs/scale.md).
const quotaCostEnv = "LOCAL_QUOTA_COST"

func TestQuotaCost(t *testing.T) {
	if os.Getenv(quotaCostEnv) != "1" {
		t.Skip("SKIPPED: set " + quotaCostEnv + "=1 to measure")
	}
	const n = 100
	for _, held := range []bool{false, true} {
		dir := t.TempDir()
		opts := []local.Option{local.WithDir(dir)}
		if held {
			opts = append(opts, local.WithDiskQuota(local.DefaultDiskQuota))
		}
		slab := meminfoKiB(t, "Slab")
		free := meminfoKiB(t, "MemAvailable")
		began := time.Now()
		srv := sandboxtest.NewServer(t, opts...)
		opened := time.Since(began)
		began = time.Now()
		for i := range n {
			_, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: fmt.Sprintf("cost-%d", i)})
			require.NoError(t, err)
		}
		took := time.Since(began)
		t.Logf("held=%v: New %v; %d creates, %v each; slab %+d KiB, available memory %+d KiB per sandbox; host disk %d KiB per sandbox",
			held, opened.Round(time.Millisecond), n, (took / n).Round(10*time.Microsecond),
			(meminfoKiB(t, "Slab")-slab)/n, (meminfoKiB(t, "MemAvailable")-free)/n, hostHeld(dir)/n>>10)
		began = time.Now()
		srv.Close()
		t.Logf("held=%v: Close %v", held, time.Since(began).Round(time.Millisecond))
	}
}

// meminfoKiB reads a field of /proc/meminfo.
func meminfoKiB(t *testing.T, key string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/meminfo", key)
	return 0
}

func TestDiskQuotaHeldSaysWhyNot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts []local.Option
		why  string
	}{
		{nil, "default disk quota is watched"},
		{[]local.Option{local.WithDiskQuota(0)}, "no disk quota"},
	} {
		srv := sandboxtest.NewServer(t, c.opts...)
		held, why := srv.DiskQuotaHeld()
		assert.False(t, held)
		assert.Contains(t, why, c.why)
	}
}

// A terminal's command is watched as any other where the quota is only
// watched: it is killed once the sandbox is over its quota.
func TestQuotaWatchedTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := sandboxtest.NewServer(t, local.WithDir(dir), local.WithDiskQuota(testQuota), local.WithWatchedDiskQuota(),
		local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "watched-tty"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := pty.Run(ctx, sb, &pty.Cmd{
		Name:      "sh",
		Args:      []string{"-c", "while :; do head -c 4194304 /dev/zero >> big || exit 1; sleep 0.01; done"},
		KeepAlive: -1,
		Stdout:    &out,
	})
	require.NoError(t, err)
	assert.Equal(t, 137, code, "the watcher killed the terminal's command; output: %q", out.String())
	assert.Contains(t, out.String(), "disk quota")
}
