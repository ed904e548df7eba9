package isolate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run starts spec and returns its exit code and output.
func run(t *testing.T, spec *Spec, o Options) (int, string, string) {
	t.Helper()
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	o.Stdout, o.Stderr = outW, errW
	p, err := Start(spec, o)
	outW.Close()
	errW.Close()
	var se *StartError
	if errors.As(err, &se) {
		outR.Close()
		errR.Close()
		return se.Code, "", se.Message
	}
	if errors.Is(err, ErrUnavailable) || err != nil && strings.Contains(err.Error(), "set up sandbox") {
		outR.Close()
		errR.Close()
		t.Skipf("isolation unavailable here: %v", err)
	}
	require.NoError(t, err)
	errc := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(errR); errc <- b }()
	out, _ := io.ReadAll(outR)
	stderr := <-errc
	outR.Close()
	errR.Close()
	code, err := p.Wait()
	require.NoError(t, err)
	return code, string(out), string(stderr)
}

// bothWays runs f with the command started traced and through the exec
// stage.
func bothWays(t *testing.T, f func(t *testing.T, o Options)) {
	t.Run("traced", func(t *testing.T) { f(t, Options{}) })
	t.Run("exec-stage", func(t *testing.T) { f(t, Options{execStage: true}) })
}

func withCgroup(o Options, g *Cgroup) Options { o.Cgroup = g; return o }

func withStdout(o Options, f *os.File) Options { o.Stdout = f; return o }

func shSpec(t *testing.T, script string, args ...string) *Spec {
	dir := t.TempDir()
	return &Spec{
		Name:     "sh",
		Args:     append([]string{"-c", script, "sh"}, args...),
		Env:      []string{"PATH=/usr/bin:/bin", "HOME=/home/" + DefaultUser},
		Cwd:      "/vercel/sandbox",
		Writable: []Mount{{Host: dir, Path: "/vercel/sandbox"}},
		Hostname: "box",
		Loopback: true,
	}
}

func TestStartBasics(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		spec := shSpec(t, `id -u; hostname; pwd; echo hi > f; cat f; echo $$; ls /`)
		code, out, stderr := run(t, spec, o)
		require.Equal(t, 0, code, stderr)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.GreaterOrEqual(t, len(lines), 6, out)
		assert.Equal(t, "1000", lines[0])
		assert.Equal(t, "box", lines[1])
		assert.Equal(t, "/vercel/sandbox", lines[2])
		assert.Equal(t, "hi", lines[3])
		pid, err := strconv.Atoi(lines[4])
		require.NoError(t, err)
		assert.Less(t, pid, 100, "pids are those of a new PID namespace")
		assert.NotContains(t, lines[5:], "work")
		data, err := os.ReadFile(filepath.Join(spec.Writable[0].Host, "f"))
		require.NoError(t, err)
		assert.Equal(t, "hi\n", string(data))
	})
}

func TestStartRoot(t *testing.T) {
	spec := shSpec(t, `id -u`)
	spec.Root = true
	code, out, stderr := run(t, spec, Options{})
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "0\n", out)
}

func TestStartNotFound(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		spec := shSpec(t, "")
		spec.Name, spec.Args = "no-such-command", nil
		code, _, stderr := run(t, spec, o)
		assert.Equal(t, 127, code)
		assert.Equal(t, "no-such-command: command not found\n", stderr)
	})
}

func TestStartReadOnlyRoot(t *testing.T) {
	spec := shSpec(t, `touch /x 2>&1; touch /usr/x 2>&1; { echo x > /proc/sys/kernel/hostname; } 2>&1; exit 0`)
	spec.Root = true
	code, out, _ := run(t, spec, Options{})
	require.Equal(t, 0, code)
	assert.Equal(t, 3, strings.Count(out, "Read-only file system"), out)
}

func TestSignalForwarded(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		spec := shSpec(t, `trap 'echo got; exit 3' TERM; echo ready; while :; do sleep 0.05; done`)
		outR, outW, err := os.Pipe()
		require.NoError(t, err)
		defer outR.Close()
		p, err := Start(spec, withStdout(o, outW))
		outW.Close()
		if err != nil {
			t.Skipf("isolation unavailable here: %v", err)
		}
		buf := make([]byte, 6)
		_, err = io.ReadFull(outR, buf)
		require.NoError(t, err)
		require.NoError(t, p.Signal(syscall.SIGTERM))
		code, err := p.Wait()
		require.NoError(t, err)
		assert.Equal(t, 3, code)
	})
}

// The limits bind the command only: the init process, a Go program that
// keeps running, and the exec stage need far more address space than the
// command is allowed, and large arguments make them allocate.
func TestLimitsBindOnlyTheCommand(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		const big = 100 << 10
		for i := range 5 {
			spec := shSpec(t, `echo ${#BIG7} ${#1}; ulimit -v; ulimit -t; ulimit -f`, strings.Repeat("7", big))
			for j := range 8 {
				spec.Env = append(spec.Env, "BIG"+strconv.Itoa(j)+"="+strings.Repeat("x", big))
			}
			spec.Rlimits = []Rlimit{
				{Resource: syscall.RLIMIT_AS, Cur: 48 << 20, Max: 48 << 20},
				{Resource: syscall.RLIMIT_CPU, Cur: 5, Max: 6},
				{Resource: syscall.RLIMIT_FSIZE, Cur: 1 << 20, Max: 1 << 20},
			}
			code, out, stderr := run(t, spec, o)
			require.Equal(t, 0, code, "run %d: %s", i, stderr)
			assert.Equal(t, fmt.Sprintf("%d %d\n%d\n5\n%d\n", big, big, 48<<10, 1<<20/512), out) // ulimit -f counts 512-byte blocks
		}
	})
}

func TestStartNotExecutable(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		spec := shSpec(t, "")
		require.NoError(t, os.WriteFile(filepath.Join(spec.Writable[0].Host, "script"), []byte("echo hi\n"), 0o644))
		for name, want := range map[string]string{
			"./script":       "./script: Permission denied\n",
			"/vercel":        "/vercel: Is a directory\n",
			"/no/such/thing": "/no/such/thing: No such file or directory\n",
		} {
			spec.Name, spec.Args = name, nil
			code, _, stderr := run(t, spec, o)
			if strings.HasPrefix(want, "/no/") {
				assert.Equal(t, 127, code, name)
			} else {
				assert.Equal(t, 126, code, name)
			}
			assert.Equal(t, want, stderr, name)
		}
	})
}

// The command gets the soft RLIMIT_NOFILE the program started with, not the
// one the Go runtime raised for itself.
func TestNofileLimitKept(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		var lim syscall.Rlimit
		require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
		if lim.Max < 1000 {
			t.Skip("hard RLIMIT_NOFILE too low")
		}
		low := lim
		low.Cur = 517
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
		t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })
		code, out, stderr := run(t, shSpec(t, `ulimit -n`), o)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "517\n", out)
	})
}

// Control groups receive the command and what it starts, not the init
// process (pid 1).
func TestCgroupHoldsOnlyTheCommand(t *testing.T) {
	bothWays(t, func(t *testing.T, o Options) {
		cgs, err := FindCgroups()
		if err != nil {
			t.Skipf("no writable cgroups: %v", err)
		}
		g, err := cgs.New(256<<20, 64)
		require.NoError(t, err)
		defer g.Remove()
		name := filepath.Base(g.dirs[0])
		code, out, stderr := run(t, shSpec(t, `sh -c 'cat /proc/$$/cgroup'; echo ---; cat /proc/1/cgroup`), withCgroup(o, g))
		require.Equal(t, 0, code, stderr)
		child, init, ok := strings.Cut(out, "---")
		require.True(t, ok, out)
		assert.Contains(t, child, name)
		assert.NotContains(t, init, name)
	})
}
