package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/vercelcli"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/isolated"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/conformance"
)

// conformanceClock is the fixed clock of the fakes the suite runs against,
// so that their answers are the same bytes on every run.
func conformanceClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// newConformanceFake returns a fake with real shell commands (and scripted
// accounts, so that useradd never reaches the host), stable ids and a
// fixed clock, checked for leaked sandboxes when the test ends.
func newConformanceFake(t testing.TB, opts ...local.Option) *sandboxtest.Server {
	base := []local.Option{
		local.WithExecutor(sandboxtest.NewAccounts().Executor(hostexec.New())),
		local.WithSeed(1),
		local.WithClock(conformanceClock),
	}
	srv := sandboxtest.NewServer(t, append(base, opts...)...)
	srv.CheckLeaks()
	return srv
}

func TestConformanceFake(t *testing.T) {
	t.Parallel()
	srv := newConformanceFake(t)
	conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client() }, conformance.Params{})

	// Every command the suite started ran exactly once.
	seen := map[string]bool{}
	for _, c := range srv.Commands() {
		assert.False(t, seen[c.Command.ID], "command %s recorded twice", c.Command.ID)
		seen[c.Command.ID] = true
	}
	assert.Equal(t, 44, srv.CommandCount(),
		"commands the suite starts: 5 attached, 2 detached, 2 in files, 1 in resume, 16 in filesystem, 17 in users, 1 in hosted (the missing executable never runs)")
	for _, sb := range srv.Sandboxes() {
		t.Errorf("sandbox %s outlived the suite", sb.Name)
	}
}

func TestConformanceSkipAndPrefix(t *testing.T) {
	t.Parallel()
	srv := newConformanceFake(t)
	all := conformance.Scenarios()
	conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client() }, conformance.Params{
		Prefix:       "custom-prefix",
		Skip:         all[1:],
		CreateParams: func(p *sandbox.CreateParams) { p.VCPUs = 4 },
	})
	var created []string
	for _, r := range srv.RequestsTo("POST", "/v*/sandboxes") {
		created = append(created, string(r.Body))
	}
	require.Len(t, created, 1, "only the lifecycle scenario ran")
	assert.Contains(t, created[0], `"name":"custom-prefix-lifecycle"`)
	assert.Contains(t, created[0], `"vcpus":4`)
	assert.Zero(t, srv.CommandCount())
}

// brokenEnv names the variable that makes TestConformanceBrokenFake run:
// it is meant to fail, and runs only in the child process that
// TestConformanceCatchesBrokenFake starts.
const brokenEnv = "SANDBOXTEST_CONFORMANCE_BROKEN"

// swappedExecutor runs commands with standard output and standard error
// swapped: a fake with this bug must fail the suite.
type swappedExecutor struct{ local.Executor }

func (e swappedExecutor) Start(ctx context.Context, cmd *local.Cmd) (local.Process, error) {
	c := *cmd
	c.Stdout, c.Stderr = cmd.Stderr, cmd.Stdout
	return e.Executor.Start(ctx, &c)
}

func TestConformanceBrokenFake(t *testing.T) {
	if os.Getenv(brokenEnv) != "1" {
		t.Skip("runs only as the child of TestConformanceCatchesBrokenFake")
	}
	srv := newConformanceFake(t, local.WithExecutor(swappedExecutor{hostexec.New()}))
	conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client() }, conformance.Params{Skip: []string{conformance.ScenarioLifecycle, conformance.ScenarioResume, conformance.ScenarioFilesystem,
		conformance.ScenarioUsers, conformance.ScenarioDrives, conformance.ScenarioSnapshotTree}})
}

// TestConformanceCatchesBrokenFake proves that the suite fails against a
// fake that mixes up the output streams, and names what broke.
func TestConformanceCatchesBrokenFake(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child test process")
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestConformanceBrokenFake$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.Error(t, err, "the suite passed against a broken fake:\n%s", out.String())
	text := out.String()
	assert.Contains(t, text, "--- FAIL: TestConformanceBrokenFake/attached")
	assert.Contains(t, text, `stdout "err", stderr "out"`)
	assert.Contains(t, text, "--- FAIL: TestConformanceBrokenFake/detached")
	assert.Contains(t, text, "--- PASS: TestConformanceBrokenFake/errors", "scenarios without output still pass")
}

// liveEnv opts in to running the suite against the real Vercel Sandbox API.
const liveEnv = "SANDBOXTEST_LIVE"

// TestConformanceLive runs the suite against the real service when
// SANDBOXTEST_LIVE=1 and credentials are found (VERCEL_OIDC_TOKEN, or
// VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID, or a linked
// project). It creates and deletes real sandboxes, which costs money.
func TestConformanceLive(t *testing.T) {
	if os.Getenv(liveEnv) != "1" {
		t.Skipf("set %s=1 and Vercel credentials (VERCEL_OIDC_TOKEN, or VERCEL_TOKEN with VERCEL_TEAM_ID and VERCEL_PROJECT_ID) to run the suite against the real API", liveEnv)
	}
	provider := vercelcli.Default(auth.DefaultOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := provider.Credentials(ctx); err != nil {
		t.Skipf("%s=1 but no usable Vercel credentials: %v", liveEnv, err)
	}
	prefix := fmt.Sprintf("%s-%d", conformance.DefaultPrefix, time.Now().Unix())
	conformance.Run(t, func(t *testing.T) *sandbox.Client {
		c, err := sandbox.NewClient(sandbox.WithCredentials(provider))
		require.NoError(t, err)
		return c
	}, conformance.Params{Prefix: prefix, Timeout: 5 * time.Minute})
}

// exchangeLog is an http.RoundTripper that logs every exchange as text:
// the request line and body, the status, the response headers that the
// fake controls and the response body as far as the client read it.
type exchangeLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	ex   []*bytes.Buffer
}

func (l *exchangeLog) RoundTrip(r *http.Request) (*http.Response, error) {
	buf := &bytes.Buffer{}
	l.mu.Lock()
	l.ex = append(l.ex, buf)
	l.mu.Unlock()
	fmt.Fprintf(buf, "%s %s\n", r.Method, r.URL.RequestURI())
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(buf, "%q\n", body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := l.base.RoundTrip(r)
	if err != nil {
		fmt.Fprintf(buf, "error %v\n", err)
		return nil, err
	}
	fmt.Fprintf(buf, "%d %s %s\n", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Vercel-Id"))
	resp.Body = &teeBody{ReadCloser: resp.Body, mu: &l.mu, w: buf}
	return resp, nil
}

func (l *exchangeLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.ex {
		b.Write(e.Bytes())
		b.WriteString("--\n")
	}
	return b.String()
}

type teeBody struct {
	io.ReadCloser
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.mu.Lock()
	t.w.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

// TestConformanceIsDeterministic runs the suite against two fresh fakes and
// checks that every request and every answer is the same, byte for byte:
// what makes the suite recordable and replayable. The filesystem scenario
// is left out: it reports inode numbers and access times.
func TestConformanceIsDeterministic(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T) string {
		srv := newConformanceFake(t)
		log := &exchangeLog{base: http.DefaultTransport}
		conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client(sandbox.WithTransport(log)) }, conformance.Params{Skip: []string{conformance.ScenarioFilesystem}})
		return log.String()
	}
	var first, second string
	t.Run("first", func(t *testing.T) { first = run(t) })
	t.Run("second", func(t *testing.T) { second = run(t) })
	require.NotEmpty(t, first)
	assert.Empty(t, cmp.Diff(first, second), "the two runs differ")
}

// TestConformanceIsolated runs the suite on the fake with the
// isolated executor, where commands see the sandbox's own tree at
// /vercel/sandbox as on the real service. It is skipped where the kernel
// does not allow unprivileged namespaces.
func TestConformanceIsolated(t *testing.T) {
	t.Parallel()
	e, err := isolated.New()
	if errors.Is(err, isolated.ErrUnavailable) {
		t.Skipf("no isolation here: %v", err)
	}
	require.NoError(t, err)
	srv := newConformanceFake(t, local.WithExecutor(e))
	var p conformance.Params
	if ok, why := e.Users(); !ok {
		t.Logf("users scenario skipped: %s", why)
		p.Skip = append(p.Skip, conformance.ScenarioUsers)
	}
	conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client() }, p)
}
