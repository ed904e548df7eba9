package sandboxtest_test

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func cmdOf(name string, args ...string) *local.Cmd {
	return &local.Cmd{Name: name, Args: args, Cwd: "/vercel/sandbox", Env: map[string]string{}}
}

// verifyNoLeaks checks, once t and all its parallel subtests are done, that
// they left no goroutine behind.
func verifyNoLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func TestScript(t *testing.T) {
	verifyNoLeaks(t)

	t.Run("first registered match wins", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("git"), sandboxtest.Reply{Stdout: "by name\n"}).
			Handle(sandboxtest.MatchArgs("git", "status"), sandboxtest.Reply{Stdout: "by args\n"}).
			Handle(sandboxtest.MatchArgs("npm", "install"), sandboxtest.Reply{Stdout: "install\n"}).
			Handle(sandboxtest.MatchRegexp(regexp.MustCompile(`^npm run \w+$`)), sandboxtest.Reply{Stdout: "run\n"}).
			Handle(func(c *local.Cmd) bool { return c.Sudo }, sandboxtest.Reply{Stdout: "root\n"})

		out, _, code := exectest.Run(t, s, cmdOf("git", "status"))
		assert.Equal(t, "by name\n", out)
		assert.Equal(t, 0, code)

		out, _, _ = exectest.Run(t, s, cmdOf("npm", "install"))
		assert.Equal(t, "install\n", out)
		out, _, _ = exectest.Run(t, s, cmdOf("npm", "run", "build"))
		assert.Equal(t, "run\n", out)
		_, _, code = exectest.Run(t, s, cmdOf("npm", "run", "build", "--watch"))
		assert.Equal(t, 127, code, "the regexp is anchored")
		out, _, _ = exectest.Run(t, s, cmdOf("npm", "install", "x"))
		assert.Empty(t, out)

		sudo := cmdOf("apt-get", "install", "-y", "jq")
		sudo.Sudo = true
		out, _, _ = exectest.Run(t, s, sudo)
		assert.Equal(t, "root\n", out)
	})

	t.Run("overrides come first, newest first, and can be removed", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("git"), sandboxtest.Reply{Stdout: "base\n"})
		removeA := s.Override(sandboxtest.MatchName("git"), sandboxtest.Reply{Stdout: "A\n"})
		removeB := s.Override(sandboxtest.MatchArgs("git", "push"), sandboxtest.Reply{Stderr: "rejected\n", ExitCode: 1})
		s.Handle(sandboxtest.MatchArgs("git", "push"), sandboxtest.Reply{Stdout: "late base\n"})

		out, errOut, code := exectest.Run(t, s, cmdOf("git", "push"))
		assert.Equal(t, []any{"", "rejected\n", 1}, []any{out, errOut, code})
		out, _, _ = exectest.Run(t, s, cmdOf("git", "pull"))
		assert.Equal(t, "A\n", out)

		removeB()
		out, _, _ = exectest.Run(t, s, cmdOf("git", "push"))
		assert.Equal(t, "A\n", out)
		removeA()
		removeA() // idempotent
		out, _, _ = exectest.Run(t, s, cmdOf("git", "push"))
		assert.Equal(t, "base\n", out)
	})

	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript(sandboxtest.ScriptFallback(sandboxtest.Reply{Stdout: "fallback\n", ExitCode: 4}))
		s.Handle(sandboxtest.MatchName("ls"), sandboxtest.Reply{Stdout: "a\n"})
		out, _, code := exectest.Run(t, s, cmdOf("whatever"))
		assert.Equal(t, "fallback\n", out)
		assert.Equal(t, 4, code)
		assert.Empty(t, s.Unmatched())
	})

	t.Run("unmatched fails with 127 and is recorded", func(t *testing.T) {
		t.Parallel()
		var s sandboxtest.Script // the zero value works
		s.Handle(sandboxtest.MatchName("ls"), sandboxtest.Reply{})
		out, errOut, code := exectest.Run(t, &s, cmdOf("pnpm", "install", "--frozen-lockfile"))
		assert.Equal(t, 127, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "pnpm: command not found")
		assert.Contains(t, errOut, `no handler matched "pnpm install --frozen-lockfile"`)

		un := s.Unmatched()
		require.Len(t, un, 1)
		assert.Equal(t, "pnpm install --frozen-lockfile", un[0].CommandLine())
		assert.False(t, un[0].Matched)
		require.Len(t, s.Calls(), 1)
	})

	t.Run("calls are recorded once per execution", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
		c := &local.Cmd{
			SandboxName: "sbx", SessionID: "sess_1", CommandID: "cmd_1",
			Name: "echo", Args: []string{"hi"}, Env: map[string]string{"A": "1"},
			Cwd: "/tmp", Sudo: true,
		}
		_, _, _ = exectest.Run(t, s, c)
		c.CommandID = "cmd_2"
		_, _, _ = exectest.Run(t, s, c)

		calls := s.Calls()
		require.Len(t, calls, 2)
		assert.Equal(t, sandboxtest.Call{
			SandboxName: "sbx", SessionID: "sess_1", CommandID: "cmd_1",
			Name: "echo", Args: []string{"hi"}, Env: map[string]string{"A": "1"},
			Cwd: "/tmp", Sudo: true, Matched: true,
		}, calls[0])
		assert.Equal(t, "cmd_2", calls[1].CommandID)

		// The record is a copy: neither the caller nor the test can change it.
		c.Env["A"] = "changed"
		calls[0].Args[0] = "changed"
		again := s.Calls()
		assert.Equal(t, "1", again[0].Env["A"])
		assert.Equal(t, "hi", again[0].Args[0])
		assert.Empty(t, s.Unmatched())
	})

	t.Run("handlers may be added while commands run", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript(sandboxtest.ScriptFallback(sandboxtest.Reply{ExitCode: 1}))
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				s.Handle(sandboxtest.MatchName(fmt.Sprint("cmd", i)), sandboxtest.Reply{Stdout: "x"})
				remove := s.Override(sandboxtest.MatchArgs("x", fmt.Sprint(i)), sandboxtest.Reply{})
				remove()
			}()
			go func() {
				defer wg.Done()
				p, err := s.Start(context.Background(), cmdOf(fmt.Sprint("cmd", i)))
				if assert.NoError(t, err) {
					_, err = p.Wait()
					assert.NoError(t, err)
				}
			}()
		}
		wg.Wait()
		assert.Len(t, s.Calls(), 20)
	})

	t.Run("steps stream before the process ends", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("build"), sandboxtest.Steps{}.
			Stdout("first\n").Await(release).Stderr("warn\n").Stdout("second\n").Exit(3))

		_, out, errOut, res := exectest.Start(t, context.Background(), s, cmdOf("build"))
		<-out.First() // the first chunk arrived ...
		select {
		case r := <-res:
			t.Fatalf("process ended before it was released: %+v", r)
		default: // ... while the process still runs: it waits for release
		}
		assert.Equal(t, []string{"first\n"}, out.Chunks())
		close(release)
		r := <-res
		require.NoError(t, r.Err)
		assert.Equal(t, 3, r.Code)
		assert.Equal(t, []string{"first\n", "second\n"}, out.Chunks())
		assert.Equal(t, "warn\n", errOut.String())
	})

	t.Run("a signal ends a sleep with 128+sig", func(t *testing.T) {
		t.Parallel()
		for _, sig := range []int{1, 2, 15, 9} {
			s := sandboxtest.NewScript()
			s.Handle(sandboxtest.MatchName("sleep"), sandboxtest.Steps{}.Stdout("zz").Sleep(time.Hour).Stdout("never"))
			p, out, _, res := exectest.Start(t, context.Background(), s, cmdOf("sleep"))
			<-out.First()
			require.NoError(t, p.Signal(sig))
			r := <-res
			assert.Equal(t, 128+sig, r.Code, "signal %d", sig)
			assert.Equal(t, "zz", out.String())
			assert.NoError(t, p.Signal(15), "signalling a finished process is not an error")
		}
	})

	t.Run("Block runs until killed; non-fatal signals are ignored", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		gate := make(chan struct{})
		s.Handle(sandboxtest.MatchName("server"), sandboxtest.Steps{}.Await(gate).Stdout("up\n").Block())
		p, out, _, res := exectest.Start(t, context.Background(), s, cmdOf("server"))
		require.NoError(t, p.Signal(18)) // SIGCONT
		require.NoError(t, p.Signal(28)) // SIGWINCH
		require.NoError(t, p.Signal(0))  // existence check
		close(gate)
		<-out.First() // a terminating signal would have ended it before this write
		require.NoError(t, p.Signal(15))
		assert.Equal(t, 143, (<-res).Code)
	})

	t.Run("Ignore traps a signal, SIGKILL is final", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		gate := make(chan struct{})
		s.Handle(sandboxtest.MatchName("stubborn"), sandboxtest.Steps{}.Ignore(15, 9).Await(gate).Stdout("still here\n").Block())
		p, out, _, res := exectest.Start(t, context.Background(), s, cmdOf("stubborn"))
		require.NoError(t, p.Signal(15))
		close(gate)
		<-out.First() // SIGTERM, sent before the gate opened, did not end it
		assert.Equal(t, "still here\n", out.String())
		require.NoError(t, p.Signal(9))
		assert.Equal(t, 137, (<-res).Code)
	})

	t.Run("the end of the session kills", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("sleep"), sandboxtest.Steps{}.Stdout("zz").Sleep(time.Hour))
		ctx, cancel := context.WithCancel(context.Background())
		_, out, _, res := exectest.Start(t, ctx, s, cmdOf("sleep"))
		<-out.First()
		cancel()
		assert.Equal(t, 137, (<-res).Code)

		_, err := s.Start(ctx, cmdOf("sleep"))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Len(t, s.Calls(), 1, "a command refused at Start is not recorded")
	})

	t.Run("a HandlerFunc sees signals and may ignore SIGTERM", func(t *testing.T) {
		t.Parallel()
		got := make(chan int, 4)
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("trap"), sandboxtest.HandlerFunc(func(ctx context.Context, cmd *local.Cmd, signals <-chan int) int {
			fmt.Fprintln(cmd.Stdout, "ready")
			for {
				select {
				case sig := <-signals:
					got <- sig
					if sig == 2 {
						fmt.Fprintln(cmd.Stderr, "interrupted")
						return 130
					}
				case <-ctx.Done():
					// SIGKILL is queued before the context ends, but select
					// may see either first: report a queued signal too.
					select {
					case sig := <-signals:
						got <- sig
					default:
					}
					return 0 // reported as 137 anyway
				}
			}
		}))
		p, out, errOut, res := exectest.Start(t, context.Background(), s, cmdOf("trap"))
		<-out.First()
		require.NoError(t, p.Signal(15))
		assert.Equal(t, 15, <-got)
		require.NoError(t, p.Signal(2))
		assert.Equal(t, 2, <-got)
		r := <-res
		assert.Equal(t, 130, r.Code)
		assert.Equal(t, "interrupted\n", errOut.String())

		// SIGKILL wins over the handler's own exit code.
		p, out, _, res = exectest.Start(t, context.Background(), s, cmdOf("trap"))
		<-out.First()
		require.NoError(t, p.Signal(9))
		assert.Equal(t, 9, <-got)
		assert.Equal(t, 137, (<-res).Code)
	})

	t.Run("a handler that ignores SIGKILL is cut off after the grace", func(t *testing.T) {
		t.Parallel()
		unblock := make(chan struct{})
		writeErr := make(chan error, 1)
		s := sandboxtest.NewScript(sandboxtest.ScriptKillGrace(10 * time.Millisecond))
		s.Handle(sandboxtest.MatchName("stuck"), sandboxtest.HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
			fmt.Fprint(cmd.Stdout, "a")
			<-unblock // ignores ctx
			_, err := fmt.Fprint(cmd.Stdout, "late")
			writeErr <- err
			return 0
		}))
		p, out, _, res := exectest.Start(t, context.Background(), s, cmdOf("stuck"))
		<-out.First()
		require.NoError(t, p.Signal(9))
		assert.Equal(t, 137, (<-res).Code)
		close(unblock)
		assert.Error(t, <-writeErr, "output after Wait is dropped")
		assert.Equal(t, "a", out.String())
	})

	t.Run("Sequence and built-ins", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("curl"), sandboxtest.Sequence(
			sandboxtest.Reply{Stderr: "timeout\n", ExitCode: 28},
			sandboxtest.Reply{Stdout: "ok\n"},
		))
		s.Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
		s.Handle(sandboxtest.MatchName("env"), sandboxtest.EnvHandler())

		_, _, code := exectest.Run(t, s, cmdOf("curl"))
		assert.Equal(t, 28, code)
		for range 2 {
			out, _, code := exectest.Run(t, s, cmdOf("curl"))
			assert.Equal(t, "ok\n", out)
			assert.Equal(t, 0, code)
		}

		out, _, _ := exectest.Run(t, s, cmdOf("echo", "a", "b"))
		assert.Equal(t, "a b\n", out)
		out, _, _ = exectest.Run(t, s, cmdOf("echo", "-n", "a"))
		assert.Equal(t, "a", out)

		c := cmdOf("env")
		c.Env = map[string]string{"B": "2", "A": "1"}
		out, _, _ = exectest.Run(t, s, c)
		assert.Equal(t, "A=1\nB=2\n", out)
		assert.Panics(t, func() { sandboxtest.Sequence() })
	})

	t.Run("Steps values are immutable", func(t *testing.T) {
		t.Parallel()
		base := sandboxtest.Steps{}.Stdout("a")
		b1 := base.Stdout("b")
		b2 := base.Stdout("c")
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("b1"), b1).Handle(sandboxtest.MatchName("b2"), b2).Handle(sandboxtest.MatchName("base"), base)
		out, _, _ := exectest.Run(t, s, cmdOf("b1"))
		assert.Equal(t, "ab", out)
		out, _, _ = exectest.Run(t, s, cmdOf("b2"))
		assert.Equal(t, "ac", out)
		out, _, _ = exectest.Run(t, s, cmdOf("base"))
		assert.Equal(t, "a", out)
	})

	t.Run("invalid signal", func(t *testing.T) {
		t.Parallel()
		s := sandboxtest.NewScript()
		s.Handle(sandboxtest.MatchName("x"), sandboxtest.Reply{})
		p, _, _, res := exectest.Start(t, context.Background(), s, cmdOf("x"))
		assert.Error(t, p.Signal(-1))
		<-res
	})
}
