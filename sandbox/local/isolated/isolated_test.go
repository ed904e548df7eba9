package isolated_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// newIsolated returns an isolated executor, or skips the test with the
// reason isolation is unavailable.
func newIsolated(t testing.TB, opts ...isolated.Option) *isolated.Executor {
	t.Helper()
	iso, err := isolated.New(opts...)
	if errors.Is(err, isolated.ErrUnavailable) {
		t.Skipf("SKIPPED: the isolation tests need bubblewrap and user namespaces: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = iso.Close() })
	return iso
}

// syncBuffer is a buffer that output pumps may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// isoRun runs a shell script through e directly, in a sandbox backed by
// dir, and returns the exit code and output.
func isoRun(t *testing.T, e local.Executor, dir, script string, edit ...func(*local.Cmd)) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd := &local.Cmd{
		SandboxName: "test", Name: "sh", Args: []string{"-c", script},
		Cwd: "/vercel/sandbox", Dir: dir, Stdout: &stdout, Stderr: &stderr,
	}
	for _, f := range edit {
		f(cmd)
	}
	p, err := e.Start(t.Context(), cmd)
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	return code, stdout.String(), stderr.String()
}

func requireLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("isolation needs Linux")
	}
}

func TestIsolatedUnavailableElsewhere(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Skip("only meaningful off Linux")
	}
	_, err := isolated.New()
	require.ErrorIs(t, err, isolated.ErrUnavailable)
	e, mode := isolated.Best()
	assert.IsType(t, &hostexec.Executor{}, e)
	assert.Contains(t, mode, "host (")
}

func TestIsolatedBestExecutor(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	e, mode := isolated.Best()
	assert.Equal(t, iso.Mode(), mode)
	assert.True(t, strings.HasPrefix(mode, "isolated"), mode)
	if ok, why := iso.ScopedSockets(); !ok {
		assert.Contains(t, mode, why)
	}
	require.IsType(t, &isolated.Executor{}, e)
	require.NoError(t, e.(*isolated.Executor).Close())
}

func TestIsolatedHostFilesInvisible(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("s3cr3t"), 0o644))
	wd, _ := os.Getwd()
	script := fmt.Sprintf(`for p in %q %q %q /etc/shadow /sys; do
  if cat "$p" >/dev/null 2>&1 || ls "$p" >/dev/null 2>&1; then echo "visible $p"; fi
done
echo "$(ls -A /root /home/vercel-sandbox | grep -vc ':$')"
ls /`, secret, secretDir, wd)
	code, out, stderr := isoRun(t, iso, t.TempDir(), script)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, out, "visible", "host paths must not be visible")
	assert.NotContains(t, out, "s3cr3t")
	top := strings.Fields(out)
	require.NotEmpty(t, top)
	assert.Equal(t, "1", top[0], "homes hold only the blank line ls prints between them")
	top = top[1:]
	assert.Subset(t, top, []string{"dev", "etc", "home", "proc", "root", "tmp", "usr", "vercel"})
	assert.Subset(t, []string{"bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "proc", "root",
		"run", "sbin", "shared", "tmp", "usr", "vercel"}, top, "nothing else of the host is visible")
}

func TestIsolatedWritesConfined(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	dir := t.TempDir()
	script := `for p in /x /usr/x /etc/x /bin/x /dev/x; do
  if (echo no > "$p") 2>/dev/null; then echo "wrote $p"; fi
done
echo yes > /vercel/sandbox/in.txt && echo yes > /tmp/t.txt && echo yes > ~/h.txt && echo ok`
	for _, sudo := range []bool{false, true} {
		code, out, stderr := isoRun(t, iso, dir, script, func(c *local.Cmd) { c.Sudo = sudo })
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "ok\n", out, "sudo=%v", sudo)
	}
	for _, p := range []string{"vercel/sandbox/in.txt", "tmp/t.txt", "home/vercel-sandbox/h.txt", "root/h.txt"} {
		data, err := os.ReadFile(filepath.Join(dir, p))
		require.NoError(t, err, p)
		assert.Equal(t, "yes\n", string(data))
	}
}

func TestIsolatedUsers(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	dir := t.TempDir()
	code, out, _ := isoRun(t, iso, dir, `id -u; id -un; echo $HOME; hostname`)
	require.Equal(t, 0, code)
	assert.Equal(t, "1000\nvercel-sandbox\n/home/vercel-sandbox\ntest\n", out)
	code, out, _ = isoRun(t, iso, dir, `id -u; id -un; echo $HOME`, func(c *local.Cmd) {
		c.Sudo = true
	})
	require.Equal(t, 0, code)
	assert.Equal(t, "0\nroot\n/root\n", out)
}

func TestIsolatedEtcNamesItsHost(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	script := `cat /etc/hostname; getent hosts "$(hostname)" | tr -s ' \t' ' '; getent passwd vercel-sandbox | cut -d: -f1,3
test -s /etc/ld.so.cache && echo cache
for f in /etc/hostname /etc/hosts /etc/passwd /run/hosts; do (echo x >> "$f") 2>/dev/null && echo "wrote $f"; done; true`
	// Sandboxes share the host's files of /etc; each sees its own name.
	for _, name := range []string{"alpha", "beta"} {
		for _, sudo := range []bool{false, true} {
			code, out, stderr := isoRun(t, iso, t.TempDir(), script, func(c *local.Cmd) { c.SandboxName, c.Sudo = name, sudo })
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, name+"\n127.0.0.1 localhost "+name+"\nvercel-sandbox:1000\ncache\n", out, "sudo=%v", sudo)
		}
	}
}

// listen opens a listener on the host's loopback that reports each line
// it receives.
func listen(t *testing.T) (port int, got <-chan string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ch := make(chan string, 4)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			ch <- line
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).Port, ch
}

func TestIsolatedNetwork(t *testing.T) {
	requireLinux(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	iso := newIsolated(t)
	port, got := listen(t)
	dir := t.TempDir()
	connect := func(policy string) (int, string) {
		code, _, stderr := isoRun(t, iso, dir, "", func(c *local.Cmd) {
			c.Name = "bash"
			c.Args = []string{"-c", fmt.Sprintf(`echo hello-%s > /dev/tcp/127.0.0.1/%d`, policy, port)}
			c.NetworkPolicy = policy
		})
		return code, stderr
	}
	for _, policy := range []string{"", "deny-all", "custom"} {
		code, stderr := connect(policy)
		assert.NotEqual(t, 0, code, "policy %q must not reach the host", policy)
		assert.Contains(t, stderr, "Connection refused")
	}
	code, stderr := connect("allow-all")
	require.Equal(t, 0, code, stderr)
	select {
	case line := <-got:
		assert.Equal(t, "hello-allow-all\n", line)
	case <-time.After(10 * time.Second):
		t.Fatal("the listener got nothing")
	}
	// Loopback inside the sandbox works.
	code, out, stderr := isoRun(t, iso, dir, "", func(c *local.Cmd) {
		c.Name = "bash"
		c.Args = []string{"-c", `exec 3<>/dev/tcp/127.0.0.1/1 2>/dev/null; echo rc=$?`}
	})
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "rc=1\n", out, "connection refused on the sandbox's own loopback")
}

func TestIsolatedForkBombContained(t *testing.T) {
	requireLinux(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	const limit = 48
	iso := newIsolated(t, isolated.Procs(limit))
	if os.Getuid() == 0 && !strings.Contains(iso.Limits(), "pids") {
		t.Skip("RLIMIT_NPROC does not bind the host's root and no pids cgroup is writable: " + iso.Limits())
	}
	// The bomb forks without end in a subshell the shell starts first, so
	// that the shell itself never has to fork once the limit is reached (it
	// would retry for seconds, then exit); the shell waits 3 s with builtins
	// only, then counts the processes of its sandbox but pid 1, the
	// sandbox's init process, which the limit does not cover. A count is a
	// scan of /proc, not one instant: while the bomb churns it lists
	// processes that ended during it along with their successors, so the
	// least of 50 counts is taken.
	script := `(f(){ f | f & }; f) 2>/dev/null &
SECONDS=0; while (( SECONDS < 3 )); do :; done
least=-1; for i in {1..50}; do set -- /proc/[0-9]*; (( least < 0 || $# - 1 < least )) && least=$(($# - 1)); done
echo "$least"`
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var stdout, stderr syncBuffer
	p, err := iso.Start(ctx, &local.Cmd{Name: "bash", Args: []string{"-c", script}, Cwd: "/vercel/sandbox",
		Dir: t.TempDir(), Stdout: &stdout, Stderr: &stderr})
	require.NoError(t, err)
	code, err := p.Wait()
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "the machine stayed responsive")
	var n int
	_, err = fmt.Sscan(stdout.String(), &n)
	require.NoError(t, err, "exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	assert.LessOrEqual(t, n, limit, "processes in the sandbox")
	assert.Greater(t, n, 5, "the bomb did fork")
}

func TestIsolatedMemoryLimit(t *testing.T) {
	requireLinux(t)
	for _, cgroups := range []bool{true, false} {
		t.Run(fmt.Sprintf("cgroups=%v", cgroups), func(t *testing.T) {
			opts := []isolated.Option{isolated.Memory(64 << 20)}
			if !cgroups {
				opts = append(opts, isolated.NoCgroups())
			}
			iso := newIsolated(t, opts...)
			if cgroups && strings.Contains(iso.Limits(), "rlimit address space") {
				t.Skip("no memory cgroup: " + iso.Limits())
			}
			// tail keeps the whole (endless) last line in memory.
			code, _, stderr := isoRun(t, iso, t.TempDir(), `head -c 400000000 /dev/zero | tail -n 1 >/dev/null`)
			assert.NotEqual(t, 0, code)
			assert.Equal(t, isolated.OutcomeMemoryLimit, isolated.OutcomeOf(code, stderr), "exit %d: %s", code, stderr)
			if cgroups {
				assert.Equal(t, 137, code)
			}
			// A small program is unaffected.
			code, _, stderr = isoRun(t, iso, t.TempDir(), `head -c 1000000 /dev/zero | tail -n 1 | wc -c`)
			assert.Equal(t, 0, code, stderr)
			assert.Equal(t, isolated.OutcomeExited, isolated.OutcomeOf(code, stderr))
		})
	}
}

func TestIsolatedCPULimit(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t, isolated.CPUTime(time.Second))
	code, _, stderr := isoRun(t, iso, t.TempDir(), `while :; do :; done`)
	assert.Equal(t, 152, code)
	assert.Equal(t, isolated.OutcomeCPULimit, isolated.OutcomeOf(code, stderr))
}

func TestIsolatedFileSizeLimit(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t, isolated.FileSize(1<<20))
	code, _, stderr := isoRun(t, iso, t.TempDir(), `head -c 2000000 /dev/zero > big`)
	assert.NotEqual(t, 0, code, stderr)
}

// hostProcesses lists the host pids whose command line contains s.
func hostProcesses(t *testing.T, s string) []string { return exectest.HostProcesses(t, s) }

func TestIsolatedKillLeavesNoOrphans(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t)
	const marker = "313.37"
	for _, how := range []string{"signal", "session end"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ready := make(chan struct{})
			var once sync.Once
			out := writerFunc(func(p []byte) (int, error) {
				if bytes.Contains(p, []byte("ready")) {
					once.Do(func() { close(ready) })
				}
				return len(p), nil
			})
			p, err := iso.Start(ctx, &local.Cmd{Name: "sh", Args: []string{"-c",
				`m=313; (trap '' TERM HUP; sleep $m.37) & setsid sleep $m.37 & sleep $m.37 & echo ready; wait`},
				Cwd: "/vercel/sandbox", Dir: t.TempDir(), Stdout: out})
			require.NoError(t, err)
			select {
			case <-ready:
			case <-time.After(30 * time.Second):
				t.Fatal("not ready")
			}
			require.Eventually(t, func() bool { return len(hostProcesses(t, marker)) == 3 },
				10*time.Second, 10*time.Millisecond)
			if how == "signal" {
				require.NoError(t, p.Signal(9))
			} else {
				cancel()
			}
			code, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, 137, code)
			assert.Eventually(t, func() bool { return len(hostProcesses(t, marker)) == 0 },
				5*time.Second, 20*time.Millisecond, "no process of the sandbox is left")
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestIsolatedThroughAPI drives the executor through the fake's HTTP API
// and the client.
func TestIsolatedThroughAPI(t *testing.T) {
	requireLinux(t)
	iso := newIsolated(t, isolated.Memory(128<<20), isolated.Procs(64))
	srv := sandboxtest.NewServer(t, local.WithExecutor(iso))
	client := srv.Client()
	ctx := t.Context()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "iso"})
	require.NoError(t, err)

	// File API and commands see the same tree, at the same absolute paths.
	require.NoError(t, sb.FS().WriteFile(ctx, "/vercel/app/hello.txt", []byte("from the file API\n"), 0o644))
	require.NoError(t, sb.FS().WriteFile(ctx, "/tmp/t.txt", []byte("tmp\n"), 0o644))
	out, err := sb.Command("sh", "-c", "cat /vercel/app/hello.txt app/hello.txt /tmp/t.txt; pwd; echo made > app/new.txt").Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "from the file API\nfrom the file API\ntmp\n/vercel\n", string(out))
	data, err := sb.FS().ReadFile(ctx, "/vercel/app/new.txt")
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(data))

	// Users.
	cmd := sb.Command("id", "-u")
	cmd.Sudo = true
	out, err = cmd.Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0\n", string(out))
	out, err = sb.Command("id", "-u").Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "1000\n", string(out))

	// Host files are invisible.
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("x"), 0o600))
	res, err := sb.Command("cat", secret).Run(ctx)
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Contains(t, string(res.Stderr), "No such file or directory")

	// Memory.
	res, err = sb.Command("sh", "-c", "head -c 600000000 /dev/zero | tail -n 1").Run(ctx)
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, isolated.OutcomeMemoryLimit, isolated.OutcomeOf(res.ExitCode(), string(res.Stderr)), string(res.Stderr))

	// A runaway loop is killed at its timeout, with nothing left behind.
	start := time.Now()
	cmd2 := sb.Command("sh", "-c", "m=271; sleep $m.82 & while :; do :; done")
	cmd2.Timeout = 500 * time.Millisecond
	res, err = cmd2.Run(ctx)
	require.Error(t, err)
	assert.Equal(t, 137, res.ExitCode())
	assert.Less(t, time.Since(start), 30*time.Second)
	cmds := srv.Commands()
	assert.True(t, cmds[len(cmds)-1].TimedOut, "the fake records the timeout outcome")
	assert.Eventually(t, func() bool { return len(hostProcesses(t, "271.82")) == 0 }, 5*time.Second, 20*time.Millisecond)

	// Network: default policy is loopback only, and reported so (deny-all);
	// allow-all opens it.
	require.NotNil(t, sb.Info().NetworkPolicy)
	assert.Equal(t, "deny-all", sb.Info().NetworkPolicy.Mode, "what the commands get")
	require.NotNil(t, sb.Session().NetworkPolicy)
	assert.Equal(t, "deny-all", sb.Session().NetworkPolicy.Mode)
	if _, err := exec.LookPath("bash"); err == nil {
		port, got := listen(t)
		dial := sb.Command("bash", "-c", fmt.Sprintf("echo via-api > /dev/tcp/127.0.0.1/%d", port))
		_, err = dial.Run(ctx)
		require.ErrorAs(t, err, &ee)
		_, err = sb.SetNetworkPolicy(ctx, sandbox.AllowAll())
		require.NoError(t, err)
		dial = sb.Command(dial.Name, dial.Args...) // a Cmd runs once
		_, err = dial.Run(ctx)
		require.NoError(t, err)
		select {
		case line := <-got:
			assert.Equal(t, "via-api\n", line)
		case <-time.After(10 * time.Second):
			t.Fatal("the listener got nothing")
		}
	}

	// Stop ends a detached command with everything it started; the tree
	// survives a stop and resume.
	h, err := sb.Command("sh", "-c", "m=161; sleep $m.80 & sleep $m.80").Start(ctx)
	require.NoError(t, err)
	_ = h
	require.Eventually(t, func() bool { return len(hostProcesses(t, "161.80")) == 2 }, 10*time.Second, 20*time.Millisecond)
	_, err = sb.Stop(ctx)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return len(hostProcesses(t, "161.80")) == 0 }, 5*time.Second, 20*time.Millisecond)
	out, err = sb.Command("cat", "app/new.txt").Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(out))
}

// The server reports, for a sandbox without a network policy, the network
// its commands get.
func TestDefaultNetworkPolicy(t *testing.T) {
	requireLinux(t)
	var _ local.NetworkReporter = newIsolated(t)
	assert.Equal(t, "deny-all", newIsolated(t).DefaultNetworkPolicy())
	assert.Equal(t, "allow-all", newIsolated(t, isolated.HostNetwork()).DefaultNetworkPolicy())
}
