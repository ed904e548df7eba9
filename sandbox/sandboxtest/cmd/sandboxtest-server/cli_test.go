//go:build unix

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// The official Vercel Sandbox CLI (npm sandbox, pinned in testdata/cli)
// against this server, every command of the Sandbox API. Install it with
// `npm ci` in testdata/cli (or run .ci/cli.sh), then, in this directory,
//
//	SANDBOXTEST_CLI=testdata/cli/node_modules/.bin/sandbox go test -run TestOfficialCLI -v
//
// (SANDBOXTEST_CLI is absolute, or relative to this directory.)
// The CLI reaches the server through testdata/cli/preload.mjs, and takes
// its team and project from .vercel/project.json in its working directory
// (see docs/testing.md).
const (
	cliEnv     = "SANDBOXTEST_CLI"
	cliDir     = "testdata/cli"
	cliTeam    = "team_cli"
	cliProject = "prj_cli"
	// cliBudget bounds the whole run unless SANDBOXTEST_CLI_BUDGET says
	// otherwise (on a loaded machine); a command, or a wait for a
	// terminal's output, gets 3/8 of it.
	cliBudget    = 2 * time.Minute
	cliBudgetEnv = "SANDBOXTEST_CLI_BUDGET"
	// cliExecutorEnv chooses the server's --executor (default auto).
	cliExecutorEnv = "SANDBOXTEST_CLI_EXECUTOR"
)

func TestOfficialCLI(t *testing.T) {
	c := startCLI(t)
	// Five runs at once (with -parallel 5, as .ci/cli.sh runs it), each in
	// sandboxes of its own.
	t.Run("life", func(t *testing.T) { t.Parallel(); cliLife(c.with(t)) })
	t.Run("run", func(t *testing.T) { t.Parallel(); cliRunRm(c.with(t)) })
	t.Run("sh", func(t *testing.T) { t.Parallel(); cliShRm(c.with(t)) })
	t.Run("config", func(t *testing.T) { t.Parallel(); cliConfig(c.with(t)) })
	t.Run("drives", func(t *testing.T) { t.Parallel(); cliDrives(c.with(t)) })
}

// cliLife takes one sandbox through its life: create, exec, cp,
// snapshot, fork, sessions, connect, stop, remove.
func cliLife(c *cliRun) {
	t := c.t
	// create: the name on stdout, the rest on stderr.
	r := c.ok("create", "--name", "cli-a", "--env", "GREETING=hi there", "--tag", "suite=cli")
	assert.Equal(t, "cli-a", r.stdout)
	assert.Contains(t, r.stderr, "Sandbox  created.") // the name went to stdout
	assert.Contains(t, r.stderr, "team: "+cliTeam)
	assert.Equal(t, "running", c.status("cli-a"))

	// exec: output, exit code, the sandbox's env and -e.
	r = c.run("exec", "-e", "EXTRA=1", "cli-a", "--", "sh", "-c", `echo "$GREETING/$EXTRA"; pwd; mkdir sub; echo oops >&2; exit 7`)
	require.Equal(t, 7, r.code, "%s", r)
	lines := strings.Split(r.stdout, "\n")
	require.Len(t, lines, 2, "%s", r)
	assert.Equal(t, "hi there/1", lines[0])
	cwd := lines[1]
	require.True(t, strings.HasPrefix(cwd, "/"), "cwd %q", cwd)
	assert.Contains(t, r.stderr, "oops")
	r = c.run("exec", "--timeout", "1s", "cli-a", "--", "sleep", "30")
	assert.Equal(t, 137, r.code, "--timeout kills the command (SIGKILL): %s", r)
	assert.Contains(t, r.stderr, "Command was killed")

	// cp, both ways, byte for byte.
	payload := make([]byte, 200<<10)
	_, _ = rand.Read(payload)
	local := filepath.Join(c.dir, "payload.bin")
	require.NoError(t, os.WriteFile(local, payload, 0o644))
	r = c.ok("cp", local, "cli-a:"+cwd+"/up.bin")
	assert.Contains(t, r.stderr, "successfully")
	r = c.ok("exec", "-w", cwd+"/sub", "cli-a", "--", "sh", "-c", "pwd; wc -c < ../up.bin; printf 'made inside\\n' > ../inside.txt")
	assert.Equal(t, cwd+"/sub\n204800", r.stdout)
	c.ok("cp", "cli-a:"+cwd+"/up.bin", filepath.Join(c.dir, "down.bin"))
	got, err := os.ReadFile(filepath.Join(c.dir, "down.bin"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(payload, got), "the round trip kept every byte (%d of %d back)", len(got), len(payload))

	// snapshot: refused without --stop; then taken, listed, read, in the tree.
	r = c.run("snapshot", "cli-a")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "Confirm with --stop")
	assert.Equal(t, "running", c.status("cli-a"))
	r = c.ok("snapshot", "--stop", "cli-a")
	snap := regexp.MustCompile(`Snapshot (snap_\w+) created`).FindStringSubmatch(r.stderr)
	require.NotNil(t, snap, "%s", r)
	snapID := snap[1]
	assert.Equal(t, "stopped", c.status("cli-a"))
	assert.Regexp(t, `(?m)^`+snapID+`\s+created\s`, c.ok("snapshots", "list", "--name", "cli-a").stdout)
	assert.Regexp(t, `(?m)^`+snapID+`\s+created\s`, c.ok("snapshots", "get", snapID).stdout)
	assert.Contains(t, c.ok("snapshots", "tree", "cli-a").stdout, snapID)

	// fork: a new sandbox with the snapshot's files.
	r = c.ok("fork", "cli-a", "--name", "cli-b")
	assert.Equal(t, "cli-b", r.stdout)
	assert.Contains(t, r.stderr, "forked from cli-a")

	// sessions: cli-a's stopped session, cli-b's running one.
	r = c.ok("sessions", "list", "--all", "cli-a")
	assert.Regexp(t, `(?m)^sbx_\w+\s+stopped\s`, r.stdout)
	assert.NotRegexp(t, `(?m)^sbx_\w+\s+running\s`, r.stdout)
	r = c.ok("sessions", "list", "cli-b")
	assert.Regexp(t, `(?m)^sbx_\w+\s+running\s`, r.stdout)

	// connect: a shell on a terminal, typed input, Ctrl-C, a resize, an
	// exit code.
	tm := c.terminal(30, 100, "connect", "cli-b")
	tm.expect("▲ ")
	tm.send("echo typed-$((6*7)); stty size\r")
	tm.expect("typed-42")
	tm.expect("30 100")
	// Ctrl-C: the remote terminal turns it into SIGINT for its foreground
	// job. Until the shell has made sleep that job, a SIGINT is the
	// shell's own, so ^C is typed again (with the next command, which a ^C
	// discards from the input) until sleep has ended: ten tries, where
	// sleep would run for 100 s.
	tm.send("echo sleeping-$((2+3)); sleep 100\r")
	tm.expect("sleeping-5")
	after := regexp.MustCompile(`after-2`)
	interrupted := false
	for try := 1; try <= 10 && !interrupted; try++ {
		tm.send("\x03")
		tm.send("echo after-$((1+1))\r")
		if _, interrupted = tm.within(after, 5*time.Second); interrupted && try > 1 {
			t.Logf("Ctrl-C typed %d times before sleep ended", try)
		}
	}
	require.True(t, interrupted, "Ctrl-C did not end sleep 100; the terminal showed:\n%s", tm.output())
	tm.resize(40, 120)
	tm.send("echo env-$TERM; wc -c < up.bin; cat inside.txt; exit 5\r")
	tm.expect("env-xterm-256color")
	tm.expect("204800")
	tm.expect("made inside") // the fork has the snapshot's files
	assert.Equal(t, 5, tm.wait(), "the shell's exit code is the CLI's")
	assert.Contains(t, tm.output(), "connection to ▲ cli-b closed")

	// stop, list, remove, snapshots delete.
	r = c.ok("stop", "cli-b")
	assert.Contains(t, r.stderr, "Sandbox stopped.")
	assert.Equal(t, "stopped", c.status("cli-b"))
	r = c.ok("list", "--all")
	assert.Regexp(t, `(?m)^cli-a\s+stopped\s`, r.stdout)
	assert.Regexp(t, `(?m)^cli-b\s+stopped\s`, r.stdout)
	c.ok("remove", "cli-a", "cli-b")
	assert.Equal(t, "", c.status("cli-a"))
	assert.Equal(t, "", c.status("cli-b"))
	c.ok("snapshots", "delete", snapID)
	code, body := c.api(http.MethodGet, "/v2/sandboxes/snapshots/"+snapID)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, string(body), `"status":"deleted"`)
}

// cliRunRm runs one command in a sandbox of its own (run --rm), and lists
// sandboxes with the scope given as flags rather than by project.json.
func cliRunRm(c *cliRun) {
	t := c.t
	r := c.run("run", "--rm", "--name", "cli-run", "--", "sh", "-c", `echo "ran-$((2+3))"; exit 3`)
	assert.Equal(t, 3, r.code, "%s", r)
	assert.Equal(t, "cli-runran-5", r.stdout, "the name, then the command's output")
	assert.Equal(t, "", c.status("cli-run"), "run --rm removed its sandbox")

	flags := c.inDir(t.TempDir())
	flags.ok("create", "--name", "cli-flags", "--token", c.token, "--scope", cliTeam, "--project", cliProject)
	r = flags.ok("list", "--token", c.token, "--scope", cliTeam, "--project", cliProject)
	assert.Regexp(t, `(?m)^cli-flags\s+running\s`, r.stdout)
	flags.ok("remove", "cli-flags", "--token", c.token, "--scope", cliTeam, "--project", cliProject)
	assert.Equal(t, "", c.status("cli-flags"))
}

// cliShRm creates a sandbox with a shell (sh --rm), which removes it when
// the shell exits. While the shell is open, exec -i runs a second
// terminal in the sandbox, and the CLI extends the sandbox's timeout from
// 10 seconds before it ends.
func cliShRm(c *cliRun) {
	t := c.t
	const timeout = 40 * time.Second
	tm := c.terminal(24, 80, "sh", "--rm", "--name", "cli-sh", "--timeout", timeout.String())
	tm.expect("▲ ")
	tm.send("echo in-$((40+2))\r")
	tm.expect("in-42")

	// exec -i: a command on a terminal that reads what is typed.
	tm2 := c.terminal(24, 80, "exec", "-i", "cli-sh", "--", "sh", "-c", `read line; echo "got:$line"; test -t 0 && echo on-a-tty; exit 4`)
	tm2.expect("$ sh -c")
	tm2.send("hello there\r")
	tm2.expect("got:hello there")
	tm2.expect("on-a-tty")
	assert.Equal(t, 4, tm2.wait())

	assert.Eventually(t, func() bool {
		r, code, err := c.fetch("cli-sh")
		return err == nil && code == http.StatusOK && r.Session.Status == "running" && r.Session.Timeout > timeout.Milliseconds()
	}, timeout+15*time.Second, 100*time.Millisecond, "the CLI extends the timeout")
	tm.send("exit 0\r")
	assert.Equal(t, 0, tm.wait())
	assert.Equal(t, "", c.status("cli-sh"), "sh --rm removed its sandbox")
}

// cliConfig sets a sandbox's settings and reads them back, and tries two
// creates that fail.
func cliConfig(c *cliRun) {
	t := c.t
	r := c.ok("create", "--name", "cli-c", "--silent", "-p", "3000")
	assert.Equal(t, "", r.stdout, "--silent")
	c.ok("config", "vcpus", "cli-c", "4")
	c.ok("config", "timeout", "cli-c", "10m")
	c.ok("config", "persistent", "cli-c", "false")
	c.ok("config", "snapshot-expiration", "cli-c", "1d")
	c.ok("config", "keep-last-snapshots", "cli-c", "3")
	r = c.ok("config", "ports", "cli-c", "-p", "3000", "-p", "4000")
	assert.Contains(t, r.stderr, "• 4000 -> https://")
	c.ok("config", "tags", "cli-c", "--tag", "suite=cli", "--tag", "more=yes")
	c.ok("config", "network-policy", "cli-c", "--mode", "deny-all")
	r = c.ok("config", "list", "cli-c")
	for _, row := range []string{
		`vCPUs\s+4`, `Timeout\s+10 minutes`, `Persistent\s+false`, `Snapshot expiration\s+1 day`,
		`Keep last snapshots\s+count=3`, `Ports\s+3000, 4000`, `Network policy\s+deny-all`,
		`Tags\s+(suite=cli, more=yes|more=yes, suite=cli)`,
	} {
		assert.Regexp(t, `(?m)^`+row+`\s*$`, r.stdout)
	}

	// Failed creates make nothing.
	r = c.run("create", "--name", "cli-c")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "already exists")
	r = c.run("create", "--name", "cli-bad", "--snapshot", "snap_missing")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "snap_missing was not found")
	assert.Equal(t, "", c.status("cli-bad"))

	c.ok("remove", "cli-c")
	assert.Equal(t, "", c.status("cli-c"))
}

// cliDrives gets or creates a drive, lists it and deletes it.
func cliDrives(c *cliRun) {
	t := c.t
	c.ok("drives", "get-or-create", "cli-drive")
	assert.Regexp(t, `(?m)^cli-drive\s`, c.ok("drives", "list").stdout)
	c.ok("drives", "delete", "cli-drive")
	code, _ := c.api(http.MethodGet, "/v2/sandboxes/drives/cli-drive?projectId="+cliProject)
	assert.Equal(t, http.StatusNotFound, code, "the drive is gone")
}

// cliRun runs the CLI against a server started for the test.
type cliRun struct {
	t     *testing.T
	ctx   context.Context // ends at the run's budget
	step  time.Duration   // a command's share of it
	bin   string          // the CLI
	dir   string          // its working directory
	env   []string
	base  string // the server's URL
	token string
	hc    *http.Client
}

// startCLI starts the server as `sandboxtest-server --executor auto`
// does (or with the executor SANDBOXTEST_CLI_EXECUTOR names), and returns
// a cliRun working in a directory whose .vercel/project.json names cliTeam
// and cliProject. At the end of the test it asserts that no sandbox is
// left running (and, when all else passed, none at all: each run removes
// what it made), then stops the server.
func startCLI(t *testing.T) *cliRun {
	t.Helper()
	bin := os.Getenv(cliEnv)
	if bin == "" {
		t.Skipf("set %s to the official CLI (npm sandbox) to run it against the server "+
			"(`npm ci` in %s, then %s=%s/node_modules/.bin/sandbox; see .ci/cli.sh)", cliEnv, cliDir, cliEnv, cliDir)
	}
	bin, err := filepath.Abs(bin)
	require.NoError(t, err)
	_, err = exec.LookPath(bin)
	require.NoError(t, err, "%s does not name an executable", cliEnv)
	preload, err := filepath.Abs(filepath.Join(cliDir, "preload.mjs"))
	require.NoError(t, err)

	budget := cliBudget
	if v := os.Getenv(cliBudgetEnv); v != "" {
		budget, err = time.ParseDuration(v)
		require.NoError(t, err, "%s", cliBudgetEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	begun := time.Now()
	t.Cleanup(func() { t.Logf("the CLI run took %v (budget %v)", time.Since(begun).Round(time.Millisecond), budget) })
	token := "cli-" + rand.Text()
	executor := cmp.Or(os.Getenv(cliExecutorEnv), "auto")
	serverCtx, stop := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(serverCtx, []string{"--listen", "127.0.0.1:0", "--token", token, "--executor", executor}, pw, io.Discard)
		_ = pw.Close()
	}()
	br := bufio.NewReader(pr)
	first, _ := br.ReadString('\n')
	second, _ := br.ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, br) }()
	base, ok := strings.CutPrefix(strings.TrimSpace(first), "listening on ")
	if !ok {
		stop()
		t.Fatalf("the server did not start: %q, then %v", first, <-done)
	}
	t.Logf("server at %s, %s", base, strings.TrimSpace(second))

	home := t.TempDir()
	c := &cliRun{
		t: t, ctx: ctx, step: budget * 3 / 8, bin: bin, dir: t.TempDir(), base: base, token: token,
		hc: &http.Client{Transport: &http.Transport{}},
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
			"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
			"XDG_DATA_HOME=" + filepath.Join(home, "data"),
			"TMPDIR=" + home,
			`NODE_OPTIONS=--import "` + preload + `"`,
			"SANDBOXTEST_URL=" + base,
			"VERCEL_AUTH_TOKEN=" + token,
			"VERCEL_SANDBOX_TELEMETRY_DISABLED=1",
			"FORCE_COLOR=0",
			"LANG=C.UTF-8",
		},
	}
	project, err := json.Marshal(map[string]string{"orgId": cliTeam, "projectId": cliProject})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(c.dir, ".vercel"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(c.dir, ".vercel", "project.json"), project, 0o644))

	t.Cleanup(func() {
		defer c.hc.CloseIdleConnections()
		defer func() {
			stop()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("the server did not stop")
			}
		}()
		var list struct {
			Sandboxes []wire.Sandbox `json:"sandboxes"`
		}
		code, body := c.api(http.MethodGet, "/v2/sandboxes?projectId="+cliProject+"&limit=50")
		if !assert.Equal(t, http.StatusOK, code, "%s", body) || !assert.NoError(t, json.Unmarshal(body, &list)) {
			return
		}
		passed := !t.Failed()
		for _, sb := range list.Sandboxes {
			assert.NotContains(t, []string{"running", "pending", "stopping", "snapshotting"}, sb.Status,
				"sandbox %s is left %s", sb.Name, sb.Status)
			if passed {
				t.Errorf("sandbox %s is left behind (%s): each run removes what it made", sb.Name, sb.Status)
			}
		}
	})
	return c
}

// with is c reporting to t.
func (c *cliRun) with(t *testing.T) *cliRun {
	d := *c
	d.t = t
	return &d
}

// inDir is c working in dir.
func (c *cliRun) inDir(dir string) *cliRun {
	d := *c
	d.dir = dir
	return &d
}

// cliResult is what one command did.
type cliResult struct {
	args           []string
	stdout, stderr string // stdout without its trailing newlines
	code           int
}

func (r cliResult) String() string {
	return "sandbox " + strings.Join(r.args, " ") + ": exit " + strconv.Itoa(r.code) +
		"\nstdout:\n" + r.stdout + "\nstderr:\n" + r.stderr
}

// command is the CLI with args, in c.dir with c.env.
func (c *cliRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs the CLI with args and returns what it did; it fails the test
// only when the CLI cannot be run or overruns its time.
func (c *cliRun) run(args ...string) cliResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, c.step)
	defer cancel()
	cmd := c.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	begun := time.Now()
	err := cmd.Run()
	c.t.Logf("sandbox %s: %v", strings.Join(args, " "), time.Since(begun).Round(time.Millisecond))
	r := cliResult{args: args, stdout: strings.TrimRight(stdout.String(), "\n"), stderr: stderr.String()}
	if ctx.Err() != nil {
		c.t.Fatalf("%s\ndid not finish in time", r)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		c.t.Fatalf("sandbox %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok is run, and fails the test unless the CLI exits 0.
func (c *cliRun) ok(args ...string) cliResult {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("%s", r)
	}
	return r
}

// api calls the server directly, with the run's token.
func (c *cliRun) api(method, path string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, body
}

// status is the sandbox's status as the server reports it, or "" when
// there is no such sandbox.
func (c *cliRun) status(name string) string {
	c.t.Helper()
	reply, ok := c.get(name)
	if !ok {
		return ""
	}
	return reply.Sandbox.Status
}

// sandboxReply is the server's answer about a sandbox.
type sandboxReply struct {
	Sandbox wire.Sandbox `json:"sandbox"`
	Session wire.Session `json:"session"`
}

// get is the server's answer about the sandbox, and whether there is one.
func (c *cliRun) get(name string) (sandboxReply, bool) {
	c.t.Helper()
	reply, code, err := c.fetch(name)
	require.NoError(c.t, err)
	if code == http.StatusNotFound {
		return reply, false
	}
	require.Equal(c.t, http.StatusOK, code)
	return reply, true
}

// fetch asks the server about the sandbox; it may run on any goroutine.
func (c *cliRun) fetch(name string) (sandboxReply, int, error) {
	var reply sandboxReply
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.base+"/v2/sandboxes/"+name+"?projectId="+cliProject, nil)
	if err != nil {
		return reply, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return reply, resp.StatusCode, err
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return reply, resp.StatusCode, fmt.Errorf("%w: %s", err, body)
	}
	return reply, resp.StatusCode, nil
}

// terminal is the CLI running on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	step time.Duration // the longest wait for output
	cmd  *exec.Cmd
	ptmx *os.File
	read chan struct{} // closed when the terminal has nothing more to read

	mu      sync.Mutex
	out     bytes.Buffer
	seen    int           // output before this has been matched
	changed chan struct{} // signalled after each read
}

// terminal starts the CLI with args on a terminal of rows by cols.
func (c *cliRun) terminal(rows, cols int, args ...string) *terminal {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.ctx)
	cmd := c.command(ctx, args...)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)})
	if err != nil {
		cancel()
		c.t.Fatalf("sandbox %s: %v", strings.Join(args, " "), err)
	}
	tm := &terminal{t: c.t, step: c.step, cmd: cmd, ptmx: ptmx, read: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		defer close(tm.read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			select {
			case tm.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the CLI is gone
			}
		}
	}()
	c.t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-tm.read
		_ = ptmx.Close()
	})
	return tm
}

// output is everything the terminal showed.
func (tm *terminal) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

// expect waits until s appears after what was matched before.
func (tm *terminal) expect(s string) {
	tm.t.Helper()
	tm.expectRe(regexp.MustCompile(regexp.QuoteMeta(s)))
}

// expectRe waits until re matches after what was matched before, and
// returns the match and its groups.
func (tm *terminal) expectRe(re *regexp.Regexp) []string {
	tm.t.Helper()
	m, ok := tm.within(re, tm.step)
	if !ok {
		tm.t.Fatalf("the terminal did not show %s in %v; it showed:\n%s", re, tm.step, tm.output())
	}
	return m
}

// within waits at most d until re matches after what was matched before,
// and returns the match and its groups, and whether it matched.
func (tm *terminal) within(re *regexp.Regexp, d time.Duration) ([]string, bool) {
	tm.t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		tm.mu.Lock()
		var m []string
		if loc := re.FindSubmatchIndex(tm.out.Bytes()[tm.seen:]); loc != nil {
			rest := tm.out.String()[tm.seen:]
			for i := 0; i < len(loc); i += 2 {
				if loc[i] >= 0 {
					m = append(m, rest[loc[i]:loc[i+1]])
				} else {
					m = append(m, "")
				}
			}
			tm.seen += loc[1]
		}
		tm.mu.Unlock()
		if m != nil {
			return m, true
		}
		select {
		case <-tm.changed:
		case <-tm.read:
			select {
			case <-tm.changed:
				continue // the last read
			default:
			}
			tm.t.Fatalf("the terminal closed without showing %s; it showed:\n%s", re, tm.output())
		case <-deadline.C:
			return nil, false
		}
	}
}

// send types s.
func (tm *terminal) send(s string) {
	tm.t.Helper()
	_, err := tm.ptmx.WriteString(s)
	require.NoError(tm.t, err)
}

// resize sets the terminal's size, and waits until a shell in the
// sandbox sees it: the CLI passes on the SIGWINCH it gets, a moment later.
func (tm *terminal) resize(rows, cols int) {
	tm.t.Helper()
	require.NoError(tm.t, pty.Setsize(tm.ptmx, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}))
	want := strconv.Itoa(rows) + " " + strconv.Itoa(cols)
	size := regexp.MustCompile(`size=(\d+ \d+)\s`)
	for try := 0; ; try++ {
		tm.send("echo size=$(stty size)\r")
		if tm.expectRe(size)[1] == want {
			return
		}
		if try == 50 {
			tm.t.Fatalf("the sandbox's terminal never became %s; it showed:\n%s", want, tm.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the CLI to exit and returns its exit code.
func (tm *terminal) wait() int {
	tm.t.Helper()
	err := tm.cmd.Wait()
	<-tm.read
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	require.NoError(tm.t, err, "%s", tm.output())
	return 0
}
