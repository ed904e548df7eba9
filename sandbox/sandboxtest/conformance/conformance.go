// Package conformance is the scenario suite that every Vercel Sandbox API
// a client talks to must pass: life cycle, attached and detached commands,
// files, resume after stop and typed errors. Run it against the local
// server, a replayed cassette, the real service, or a fake or proxy of
// your own.
package conformance

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// Names of the conformance scenarios, in the order Run runs
// them. Each is one subtest.
const (
	ScenarioLifecycle = "lifecycle" // create, get, list, update, stop, delete
	ScenarioAttached  = "attached"  // Run: stdout/stderr, exit codes, env, cwd
	ScenarioDetached  = "detached"  // Start, Ref round trip, reattach, Wait, Logs, Signal
	ScenarioFiles     = "files"     // WriteFiles, ReadFile, Mkdir, a missing file
	ScenarioResume    = "resume"    // a stopped sandbox resumes with its files
	ScenarioErrors    = "errors"    // ErrNotFound; InputError before any request

	ScenarioFilesystem   = "filesystem"    // Stat, ReadDir, Walk, Rename, links, removal, DirFS
	ScenarioUsers        = "users"         // CreateUser, AsUser, CreateGroup, membership
	ScenarioDrives       = "drives"        // get-or-create, get, list, delete
	ScenarioSnapshotTree = "snapshot-tree" // lineage; a deleted snapshot stays readable
	ScenarioHosted       = "hosted"        // hosted Vercel's own answers; see runHosted
)

// Scenarios returns the names of the conformance scenarios in
// the order they run.
func Scenarios() []string {
	return []string{ScenarioLifecycle, ScenarioAttached, ScenarioDetached, ScenarioFiles, ScenarioResume, ScenarioErrors,
		ScenarioFilesystem, ScenarioUsers, ScenarioDrives, ScenarioSnapshotTree, ScenarioHosted}
}

// DefaultPrefix starts the name of every sandbox the
// conformance suite creates, unless Params.Prefix says otherwise.
const DefaultPrefix = "sbxtest-conformance"

// conformanceModTime is the modification time of every uploaded file, so
// that uploads are the same bytes on every run.
func conformanceModTime() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Params configure Run. The zero value runs every scenario, with the
// default prefix and timeout.
type Params struct {
	// Prefix starts the names of the sandboxes the suite uses (default
	// DefaultPrefix). Each scenario's sandbox is called prefix-scenario,
	// for example sbxtest-conformance-files. Against a shared project give
	// each concurrent run its own prefix; a sandbox with one of these names
	// is deleted before the scenario creates it again, so a run that was
	// interrupted leaves nothing in the way of the next.
	Prefix string
	// Timeout bounds each scenario (default 2 minutes). Stopping and
	// resuming a persistent sandbox on the real service takes a while.
	Timeout time.Duration
	// Skip names the scenarios to skip (see Scenarios).
	Skip []string
	// CreateParams, when not nil, adjusts the parameters of every sandbox
	// the suite creates, for example to pick a runtime or a region. The
	// suite sets Name, Tags, Timeout and (for the resume scenario)
	// Persistent before calling it.
	CreateParams func(*sandbox.CreateParams)
}

type conformance struct {
	prefix  string
	timeout time.Duration
	skip    map[string]bool
	create  func(*sandbox.CreateParams)
	client  *sandbox.Client
}

// Run runs the conformance suite against the API behind the
// client newClient returns: one subtest per scenario (see
// Scenarios), covering the life cycle of a sandbox, attached and
// detached commands, files, resuming a stopped sandbox, typed errors, the
// filesystem calls, users and groups, drives and the snapshot tree. The
// users scenario needs sudo and account tools that change the sandbox's
// own /etc: a fake whose commands run on the host fails it (see
// sandboxtest.Accounts for an executor that plays them). The filesystem
// scenario reports inodes and access times, so two recordings of it
// differ. The same scenarios pass against the local server (sandbox/local), a replayed
// recording and the real Vercel Sandbox API, which is what makes them a
// check that the fake (or a recording) behaves like the real thing.
//
// newClient is called once, with the top-level t. The scenarios run one
// after the other and each sends the same requests on every run: sandbox
// names are derived from the prefix and the scenario, uploads carry fixed
// timestamps and commands write their output in single writes, so a run
// can be recorded and replayed. Commands use only tools of the real image
// (sh, printf, cat, ls, sleep, find, mv, cp, rm, ln, chmod, realpath,
// test, useradd, groupadd, usermod, gpasswd, id, sudo). Every sandbox is deleted when its
// scenario ends, whether it passed or not.
//
// Scenarios must not run in parallel with each other; Run does
// not call t.Parallel.
func Run(t *testing.T, newClient func(t *testing.T) *sandbox.Client, p Params) {
	t.Helper()
	c := &conformance{prefix: cmp.Or(p.Prefix, DefaultPrefix), timeout: p.Timeout, skip: map[string]bool{}, create: p.CreateParams}
	if c.timeout <= 0 {
		c.timeout = 2 * time.Minute
	}
	for _, name := range p.Skip {
		c.skip[name] = true
	}
	for name := range c.skip {
		if !slices.Contains(Scenarios(), name) {
			t.Fatalf("conformance.Params.Skip: unknown scenario %q (known: %s)", name, strings.Join(Scenarios(), ", "))
		}
	}
	if err := sandbox.ValidateName(c.prefix + "-" + ScenarioLifecycle); err != nil {
		t.Fatalf("conformance.Params.Prefix: %v", err)
	}
	c.client = newClient(t)
	if c.client == nil {
		t.Fatal("sandboxtest.Run: newClient returned nil")
	}
	scenarios := map[string]func(*testing.T, context.Context){
		ScenarioLifecycle: c.runLifecycle,
		ScenarioAttached:  c.runAttached,
		ScenarioDetached:  c.runDetached,
		ScenarioFiles:     c.runFiles,
		ScenarioResume:    c.runResume,
		ScenarioErrors:    c.runErrors,

		ScenarioFilesystem:   c.runFilesystem,
		ScenarioUsers:        c.runUsers,
		ScenarioDrives:       c.runDrives,
		ScenarioSnapshotTree: c.runSnapshotTree,
		ScenarioHosted:       c.runHosted,
	}
	for _, name := range Scenarios() {
		t.Run(name, func(t *testing.T) {
			if c.skip[name] {
				t.Skipf("skipped by Skip")
			}
			ctx, cancel := context.WithTimeout(t.Context(), c.timeout)
			defer cancel()
			scenarios[name](t, ctx)
		})
	}
}

// name is the sandbox name of a scenario.
func (c *conformance) name(scenario string) string { return c.prefix + "-" + scenario }

// newSandbox creates the sandbox of a scenario, removing a leftover of an
// earlier run first, and deletes it when the scenario ends.
func (c *conformance) newSandbox(t *testing.T, ctx context.Context, scenario string, persistent bool) *sandbox.Sandbox {
	t.Helper()
	return c.newSandboxWith(t, ctx, scenario, func(p *sandbox.CreateParams) {
		if persistent {
			p.Persistent = &persistent
		}
	})
}

// newSandboxWith is newSandbox with the parameters adjusted by adjust
// (before the caller's Params.CreateParams).
func (c *conformance) newSandboxWith(t *testing.T, ctx context.Context, scenario string, adjust func(*sandbox.CreateParams)) *sandbox.Sandbox {
	t.Helper()
	name := c.name(scenario)
	if err := c.client.Delete(ctx, name, sandbox.DeleteParams{}); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("deleting a leftover sandbox %s: %v", name, err)
	}
	p := sandbox.CreateParams{
		Name:    name,
		Timeout: 10 * time.Minute,
		Tags:    map[string]string{"sandboxtest": "conformance", "scenario": scenario},
	}
	adjust(&p)
	if c.create != nil {
		c.create(&p)
	}
	sb, err := c.client.Create(ctx, p)
	if err != nil {
		t.Fatalf("Create(%s): %v", name, err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.client.Delete(cctx, name, sandbox.DeleteParams{}); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("cleanup: deleting sandbox %s: %v", name, err)
		}
	})
	return sb
}

// write uploads name→content pairs with fixed timestamps.
func write(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, kv ...string) {
	t.Helper()
	var entries []files.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		entries = append(entries, files.FromBytes(kv[i], []byte(kv[i+1])))
	}
	if err := sb.FS().WriteFiles(ctx, entries, files.WriteParams{ModTime: conformanceModTime()}); err != nil {
		t.Fatalf("WriteFiles: %v", err)
	}
}

// readString reads a whole file.
func readString(t *testing.T, ctx context.Context, sb *sandbox.Sandbox, p string) string {
	t.Helper()
	data, err := sb.FS().ReadFile(ctx, p)
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", p, err)
	}
	return string(data)
}

// sh returns a command running a shell line.
func sh(sb *sandbox.Sandbox, line string) *command.Cmd { return sb.Command("sh", "-c", line) }

func (c *conformance) runLifecycle(t *testing.T, ctx context.Context) {
	name := c.name(ScenarioLifecycle)
	sb := c.newSandbox(t, ctx, ScenarioLifecycle, false)
	if sb.Name() != name {
		t.Errorf("Create: Name() = %q, want %q", sb.Name(), name)
	}
	sid := sb.SessionID()
	if sid == "" {
		t.Fatal("Create: no session id")
	}
	if st := sb.Session().Status; st.Terminal() {
		t.Errorf("Create: session status %q, want a live session", st)
	}
	if sb.Cwd() == "" || !strings.HasPrefix(sb.Cwd(), "/") {
		t.Errorf("Create: working directory %q is not absolute", sb.Cwd())
	}

	got, err := c.client.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Name() != name || got.SessionID() != sid {
		t.Errorf("Get: sandbox %s session %s, want %s session %s", got.Name(), got.SessionID(), name, sid)
	}

	found := 0
	for info, err := range c.client.List(ctx, sandbox.ListParams{SortBy: "name", NamePrefix: name}) {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if info.Name == name {
			found++
		}
	}
	if found != 1 {
		t.Errorf("List(NamePrefix %q) listed the sandbox %d times, want once", name, found)
	}

	tags := map[string]string{"sandboxtest": "conformance", "scenario": ScenarioLifecycle, "step": "updated"}
	if err := sb.Update(ctx, sandbox.UpdateParams{Tags: tags}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if v := sb.Info().Tags["step"]; v != "updated" {
		t.Errorf("Update: tag step = %q, want updated", v)
	}
	if err := got.Refresh(ctx); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if v := got.Info().Tags["step"]; v != "updated" {
		t.Errorf("after Update, Get reports tag step = %q, want updated", v)
	}

	res, err := sb.Stop(ctx)
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if res.AlreadyStopped {
		t.Error("Stop of a running sandbox reported AlreadyStopped")
	}
	if res.Session.Status != sandbox.StatusStopped {
		t.Errorf("Stop: session status %q, want stopped", res.Session.Status)
	}
	again, err := c.client.Stop(ctx, name)
	if err != nil {
		t.Fatalf("Client.Stop of a stopped sandbox: %v", err)
	}
	if !again.AlreadyStopped {
		t.Error("Client.Stop of a stopped sandbox did not report AlreadyStopped")
	}

	if err := sb.Delete(ctx, sandbox.DeleteParams{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.client.Get(ctx, name); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := c.client.Delete(ctx, name, sandbox.DeleteParams{}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func (c *conformance) runAttached(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioAttached, false)

	// Standard output and standard error stay apart, both in the writers
	// (as the bytes arrive) and in the result. The pause keeps the order
	// of the two frames the same on every run.
	var stdout, stderr bytes.Buffer
	cmd := sh(sb, "printf out; sleep 0.2; printf err >&2")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res, err := cmd.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode() != 0 || string(res.Stdout) != "out" || string(res.Stderr) != "err" {
		t.Errorf("Run: exit %d, stdout %q, stderr %q; want 0, \"out\", \"err\"", res.ExitCode(), res.Stdout, res.Stderr)
	}
	if stdout.String() != "out" || stderr.String() != "err" {
		t.Errorf("Run: writers got stdout %q, stderr %q; want \"out\", \"err\"", stdout.String(), stderr.String())
	}
	if res.CommandID == "" || res.SessionID != sb.SessionID() {
		t.Errorf("Run: command %q in session %q, want an id in session %q", res.CommandID, res.SessionID, sb.SessionID())
	}

	// A non-zero exit is an *command.ExitError that carries the result.
	res, err = sh(sb, "printf boom >&2; exit 3").Run(ctx)
	var exit *command.ExitError
	switch {
	case !errors.As(err, &exit):
		t.Errorf("Run(exit 3): error %v, want *command.ExitError", err)
	case exit.ExitCode() != 3 || string(exit.Stderr) != "boom":
		t.Errorf("Run(exit 3): ExitError exit %d, stderr %q; want 3, \"boom\"", exit.ExitCode(), exit.Stderr)
	case res == nil || res.ExitCode() != 3:
		t.Errorf("Run(exit 3): result %+v, want exit code 3", res)
	}

	// The command's environment is layered over the sandbox's.
	cmd = sh(sb, `printf '%s' "$CONFORMANCE_GREETING"`)
	cmd.Env = map[string]string{"CONFORMANCE_GREETING": "hello, conformance"}
	out, err := cmd.Output(ctx)
	if err != nil || string(out) != "hello, conformance" {
		t.Errorf("Output(env): %q, %v; want \"hello, conformance\"", out, err)
	}

	// Dir sets the working directory; relative paths resolve in it.
	if err := sb.FS().Mkdir(ctx, "workdir", 0o755); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	write(t, ctx, sb, "workdir/marker.txt", "in workdir")
	cmd = sh(sb, "cat marker.txt")
	cmd.Dir = path.Join(sb.Cwd(), "workdir")
	out, err = cmd.Output(ctx)
	if err != nil || string(out) != "in workdir" {
		t.Errorf("Output(Dir=workdir): %q, %v; want \"in workdir\"", out, err)
	}
	// Without Dir a command runs in the session's working directory.
	out, err = sh(sb, "cat workdir/marker.txt").Output(ctx)
	if err != nil || string(out) != "in workdir" {
		t.Errorf("Output(default cwd): %q, %v; want \"in workdir\"", out, err)
	}
}

func (c *conformance) runDetached(t *testing.T, ctx context.Context) {
	name := c.name(ScenarioDetached)
	sb := c.newSandbox(t, ctx, ScenarioDetached, false)

	h, err := sh(sb, "printf started; sleep 0.3; printf finished >&2; exit 5").Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	ref := h.Ref()
	if ref.SandboxName != name || ref.SessionID != sb.SessionID() || ref.CommandID == "" || ref.CommandID != h.ID() {
		t.Errorf("Start: Ref %+v, want sandbox %s, session %s and the command id", ref, name, sb.SessionID())
	}
	if st := h.Started(); st.Name != "sh" || st.Done() {
		t.Errorf("Start: started info %+v, want sh, not done", st)
	}

	// The Ref survives a trip through text, as when it is stored and read
	// back by another process, which then reattaches and waits.
	text, err := ref.MarshalText()
	if err != nil {
		t.Fatalf("Ref.MarshalText: %v", err)
	}
	var back command.Ref
	if err := back.UnmarshalText(text); err != nil || back != ref {
		t.Fatalf("Ref round trip: %+v, %v; want %+v", back, err, ref)
	}
	re, err := c.client.Attach(back)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	res, err := re.Wait(ctx)
	var exit *command.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Errorf("Wait: %v, want *command.ExitError with exit code 5", err)
	}
	if res == nil || res.ExitCode() != 5 || res.CommandID != ref.CommandID {
		t.Errorf("Wait: result %+v, want command %s with exit code 5", res, ref.CommandID)
	}
	info, err := h.Info(ctx)
	if err != nil || !info.Done() || *info.ExitCode != 5 {
		t.Errorf("Info after Wait: %+v, %v; want done with exit code 5", info, err)
	}

	// Logs replays the whole output after the command ended, in order.
	var events []string
	for ev, err := range re.Logs(ctx) {
		if err != nil {
			t.Fatalf("Logs: %v", err)
		}
		events = append(events, ev.Stream.String()+":"+string(ev.Data))
	}
	if want := []string{"stdout:started", "stderr:finished"}; !slices.Equal(events, want) {
		t.Errorf("Logs replay: %q, want %q", events, want)
	}

	// Signal delivers the signal: the shell's trap runs and sets the exit
	// code. The trap pauses so that the command is still running when the
	// kill is answered.
	k, err := sh(sb, `trap 'sleep 0.3; printf terminated; exit 7' TERM; printf ready; sleep 60 & wait`).Start(ctx)
	if err != nil {
		t.Fatalf("Start(trap): %v", err)
	}
	// Wait until the trap is installed: the command says so on stdout.
	for ev, err := range k.Logs(ctx) {
		if err != nil {
			t.Fatalf("Logs(trap): %v", err)
		}
		if ev.Stream != command.Stdout || string(ev.Data) != "ready" {
			t.Fatalf("Logs(trap): first event %s %q, want stdout \"ready\"", ev.Stream, ev.Data)
		}
		break
	}
	began := time.Now()
	if err := k.Signal(ctx, command.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	res, err = k.Wait(ctx)
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("Wait after Signal: %v (result %+v), want *command.ExitError with exit code 7", err, res)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("the killed command ended after %s; the signal did not stop it", d)
	}
	stdout, err := k.Output(ctx)
	if !errors.As(err, &exit) || string(stdout) != "readyterminated" || len(exit.Stderr) != 0 {
		t.Errorf("Output after Signal: stdout %q, %v; want \"readyterminated\", no stderr and exit code 7", stdout, err)
	}
}

func (c *conformance) runFiles(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioFiles, false)

	write(t, ctx, sb,
		"conf/a.txt", "alpha\n",
		"conf/nested/deeper/b.txt", "beta\n",
	)
	if got := readString(t, ctx, sb, "conf/a.txt"); got != "alpha\n" {
		t.Errorf("ReadFile(conf/a.txt) = %q, want \"alpha\\n\"", got)
	}
	if got := readString(t, ctx, sb, "conf/nested/deeper/b.txt"); got != "beta\n" {
		t.Errorf("ReadFile(conf/nested/deeper/b.txt) = %q, want \"beta\\n\"", got)
	}
	// An absolute path names the same file.
	if got := readString(t, ctx, sb, path.Join(sb.Cwd(), "conf/a.txt")); got != "alpha\n" {
		t.Errorf("ReadFile(absolute) = %q, want \"alpha\\n\"", got)
	}
	// Files written by the client are seen by commands, and the other way
	// round.
	out, err := sh(sb, "cat conf/a.txt; printf gamma > conf/c.txt").Output(ctx)
	if err != nil || string(out) != "alpha\n" {
		t.Errorf("Output(cat): %q, %v; want \"alpha\\n\"", out, err)
	}
	if got := readString(t, ctx, sb, "conf/c.txt"); got != "gamma" {
		t.Errorf("ReadFile of a file a command wrote = %q, want \"gamma\"", got)
	}

	if err := sb.FS().Mkdir(ctx, "conf/made", 0o755); err != nil {
		t.Fatalf("Mkdir: %v", err)
	}
	out, err = sb.Command("ls", "conf").Output(ctx)
	if want := "a.txt\nc.txt\nmade\nnested\n"; err != nil || string(out) != want {
		t.Errorf("ls conf after Mkdir: %q, %v; want %q", out, err, want)
	}

	_, err = sb.FS().Open(ctx, "conf/missing.txt")
	if !errors.Is(err, sandbox.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing): %v, want an error matching ErrNotFound and fs.ErrNotExist", err)
	}
}

func (c *conformance) runResume(t *testing.T, ctx context.Context) {
	sb := c.newSandbox(t, ctx, ScenarioResume, true)
	write(t, ctx, sb, "keep/state.txt", "kept across sessions")
	first := sb.SessionID()
	if _, err := sb.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if st := sb.Session().Status; !st.Terminal() {
		t.Fatalf("after Stop the session is %q, want stopped", st)
	}
	// The next call resumes the sandbox on a new session, with its files.
	if got := readString(t, ctx, sb, "keep/state.txt"); got != "kept across sessions" {
		t.Errorf("ReadFile after resume = %q, want \"kept across sessions\"", got)
	}
	if sb.SessionID() == first || sb.SessionID() == "" {
		t.Errorf("after resume the session is %q, want a new one (the first was %s)", sb.SessionID(), first)
	}
	out, err := sh(sb, "cat keep/state.txt").Output(ctx)
	if err != nil || string(out) != "kept across sessions" {
		t.Errorf("Output(cat) after resume: %q, %v", out, err)
	}
	res, err := sb.Stop(ctx)
	if err != nil || res.AlreadyStopped {
		t.Errorf("Stop of the resumed session: %+v, %v; want a stop that was not already done", res, err)
	}
}

func (c *conformance) runErrors(t *testing.T, ctx context.Context) {
	missing := c.name("missing")
	_, err := c.client.Get(ctx, missing)
	var ae *sandbox.APIError
	if !errors.Is(err, sandbox.ErrNotFound) || !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
		t.Errorf("Get(%s): %v, want an *APIError with status 404 matching ErrNotFound", missing, err)
	}
	if _, err := c.client.Stop(ctx, missing); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("Client.Stop(%s): %v, want ErrNotFound", missing, err)
	}

	// Bad input is refused by the client with an *InputError: against the
	// target (which would answer an APIError had the request been sent)…
	badCalls := func(cl *sandbox.Client) map[string]error {
		_, getErr := cl.Get(ctx, "not a valid name!")
		_, createErr := cl.Create(ctx, sandbox.CreateParams{Name: c.name("bad-ports"), Ports: []int{80}})
		_, attachErr := cl.Attach(command.Ref{})
		var listErr error
		for _, err := range cl.List(ctx, sandbox.ListParams{NamePrefix: "x"}) {
			listErr = err
			break
		}
		return map[string]error{"Get": getErr, "Create": createErr, "Attach": attachErr, "List": listErr}
	}
	for call, err := range badCalls(c.client) {
		var in *sandbox.InputError
		if !errors.As(err, &in) || !errors.Is(err, sandbox.ErrInvalidInput) {
			t.Errorf("%s with bad input: %v, want an *InputError", call, err)
		}
	}
	// …and against a client whose transport counts requests: none is sent.
	var sent atomic.Int32
	counting := roundTripper(func(*http.Request) (*http.Response, error) {
		sent.Add(1)
		return nil, errors.New("no request should reach the transport")
	})
	cl, err := sandbox.NewClient(
		sandbox.WithBaseURL("http://127.0.0.1:1"),
		sandbox.WithToken("conformance-token"), sandbox.WithTeam("team_conformance"), sandbox.WithProject("prj_conformance"),
		sandbox.WithTransport(counting),
		sandbox.WithRetryPolicy(sandbox.RetryPolicy{MaxRetries: -1}),
	)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	for call, err := range badCalls(cl) {
		if !errors.Is(err, sandbox.ErrInvalidInput) {
			t.Errorf("%s with bad input on a counting client: %v, want ErrInvalidInput", call, err)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("bad input sent %d requests, want none", n)
	}
	// The counter itself works: a valid call reaches the transport.
	if _, err := cl.Get(ctx, missing); err == nil || sent.Load() == 0 {
		t.Errorf("a valid Get on the counting client: %v after %d requests; the transport was not used", err, sent.Load())
	}
}

// roundTripper adapts a function to http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
