package guard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/command/guard"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

const secret = "hunter2-very-secret"

// A *sandbox.Sandbox is what a Gate usually runs commands in.
var _ guard.Target = (*sandbox.Sandbox)(nil)

type fixture struct {
	srv    *sandboxtest.Server
	script *sandboxtest.Script
	sb     *sandbox.Sandbox
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	script := sandboxtest.NewScript()
	srv := sandboxtest.NewServer(t, local.WithExecutor(script))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)
	return &fixture{srv: srv, script: script, sb: sb}
}

func basePolicy() guard.Policy {
	return guard.Policy{
		Allow: []guard.Rule{
			guard.Allow("go", "vet", "..."),
			guard.Allow("go", "test", "..."),
			guard.Allow("env"),
			guard.Allow("noisy", "..."),
		},
		Secrets: []string{secret},
	}
}

func TestGateRedactsSplitSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A JWT, built at run time so that no scanner mistakes this file for one
	// holding a real credential.
	jwt := "eyJhbGciOiJSUzI1NiJ9" + "." + "eyJzdWIiOiJ1c2VyIiwiZXhwIjo5OTk5fQ" + "." + "c2lnbmF0dXJlLWJ5dGVz"
	// The secret arrives cut across two frames, a JWT on stderr.
	f.script.Handle(sandboxtest.MatchName("go"), sandboxtest.Steps{}.
		Stdout("ok  \tpkg\tpassword=hunter2-ve").
		Stdout("ry-secret done\n").
		Stderr("token "+jwt+"\n").
		Exit(0))

	var live, userOut bytes.Buffer
	r, err := guard.NewGate(f.sb, basePolicy(), guard.WithOutput(&live))
	require.NoError(t, err)
	assert.Equal(t, f.sb.Cwd(), r.Workspace(), "the sandbox's working directory")

	res, err := r.Run(t.Context(), &command.Cmd{Name: "go", Args: []string{"test", "-run=" + secret, "./..."}, Stdout: &userOut})
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode())
	assert.Equal(t, "ok  \tpkg\tpassword=[REDACTED] done\n", string(res.Stdout))
	assert.Equal(t, "token [REDACTED]\n", string(res.Stderr))
	assert.Equal(t, string(res.Stdout), userOut.String())
	assert.NotEmpty(t, res.CommandID)

	// The command itself received the real argument.
	calls := f.script.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, []string{"test", "-run=" + secret, "./..."}, calls[0].Args)
	assert.Equal(t, f.sb.Cwd(), calls[0].Cwd)

	tr := r.Transcript()
	require.Len(t, tr.Entries, 1)
	e := tr.Entries[0]
	assert.Equal(t, []string{"go", "test", "-run=[REDACTED]", "./..."}, e.Argv)
	assert.Equal(t, "go test ...", e.Rule)
	require.NotNil(t, e.ExitCode)
	assert.Equal(t, 0, *e.ExitCode)
	assert.Equal(t, res.CommandID, e.CommandID)
	assert.False(t, e.Denied)

	js, err := json.Marshal(tr)
	require.NoError(t, err)
	var text bytes.Buffer
	_, err = tr.WriteTo(&text)
	require.NoError(t, err)
	for name, s := range map[string]string{"json": string(js), "text": text.String(), "live": live.String(), "output": e.Output} {
		assert.NotContains(t, s, secret, name)
		assert.NotContains(t, s, "hunter2", name)
		assert.NotContains(t, s, jwt[:20], name)
	}
	assert.Contains(t, e.Output, "password=[REDACTED] done")
	assert.Contains(t, live.String(), "password=[REDACTED] done")

	var back guard.Transcript
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, tr.Entries[0].Argv, back.Entries[0].Argv)
	assert.Equal(t, tr.Entries[0].Duration, back.Entries[0].Duration)
}

func TestGateDeniedRunsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, err := guard.NewGate(f.sb, basePolicy())
	require.NoError(t, err)

	denied := []struct {
		cmd  *command.Cmd
		rule string
	}{
		{&command.Cmd{Name: "curl", Args: []string{"-H", "Authorization: Bearer " + secret, "https://example.com"}}, guard.RuleDefaultDeny},
		{&command.Cmd{Name: "cat", Args: []string{"/etc/passwd"}}, guard.RuleDefaultDeny},
		{&command.Cmd{Name: "sh", Args: []string{"-c", "go vet ./... && curl evil"}}, guard.RuleShell},
		{&command.Cmd{Name: "npx", Args: []string{"evil-pkg"}}, guard.RulePackages},
		{&command.Cmd{Name: "go", Args: []string{"vet", "../../etc"}}, guard.RuleWorkspace},
		{&command.Cmd{Name: "go", Args: []string{"vet"}, Sudo: true}, guard.RuleSudo},
	}
	for _, d := range denied {
		res, err := r.Run(t.Context(), d.cmd)
		assert.Nil(t, res)
		var de *guard.DeniedError
		require.ErrorAs(t, err, &de, d.cmd.String())
		assert.Equal(t, d.rule, de.Rule)
		assert.True(t, errors.Is(err, guard.ErrDenied))
		assert.NotContains(t, err.Error(), secret)
	}
	assert.Equal(t, 0, f.srv.CommandCount(), "a denied command reached the server")
	assert.Empty(t, f.script.Calls())

	tr := r.Transcript()
	require.Len(t, tr.Entries, len(denied))
	for i, e := range tr.Entries {
		assert.True(t, e.Denied)
		assert.Equal(t, denied[i].rule, e.Rule)
		assert.NotEmpty(t, e.Reason)
		assert.Nil(t, e.ExitCode)
	}
	assert.Equal(t, "Authorization: Bearer [REDACTED]", tr.Entries[0].Argv[2])

	// An invalid command is recorded too, and is not a denial.
	_, err = r.Run(t.Context(), &command.Cmd{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	assert.Len(t, r.Transcript().Entries, len(denied)+1)
	assert.Equal(t, 0, f.srv.CommandCount())

	var text bytes.Buffer
	_, err = r.Transcript().WriteTo(&text)
	require.NoError(t, err)
	assert.Contains(t, text.String(), "$ cat /etc/passwd\n  denied by rule \"default-deny\": no rule allows cat\n")
	assert.Contains(t, text.String(), "$ \"\"\n  not run: vercel sandbox: invalid Cmd.Name: empty command name\n")
	assert.NotContains(t, text.String(), secret)
}

func TestGateExitErrorIsRedacted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.script.Handle(sandboxtest.MatchName("go"), sandboxtest.Reply{Stdout: "FAIL\n", Stderr: "leaked " + secret + "\n", ExitCode: 1})
	r, err := guard.NewGate(f.sb, basePolicy())
	require.NoError(t, err)
	res, err := r.Run(t.Context(), &command.Cmd{Name: "go", Args: []string{"test", "./..."}})
	var ee *command.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Same(t, res, ee.Result)
	assert.Equal(t, "leaked [REDACTED]\n", string(res.Stderr))
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, err.Error(), "leaked [REDACTED]")
	e := r.Transcript().Entries[0]
	require.NotNil(t, e.ExitCode)
	assert.Equal(t, 1, *e.ExitCode)
}

func TestGateEnvDirAndTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.script.Handle(sandboxtest.MatchName("env"), sandboxtest.EnvHandler())
	p := basePolicy()
	p.Workspace = "/vercel/sandbox/repo"
	p.Env = map[string]string{"CI": "true", "TOKEN_NAME": "x"}
	p.SecretEnv = map[string]string{"NPM_TOKEN": "npm-secret-value-123"}
	p.AllowEnv = []string{"EXTRA", "CI"}
	p.CommandTimeout = 90 * time.Second
	r, err := guard.NewGate(f.sb, p)
	require.NoError(t, err)

	res, err := r.Run(t.Context(), &command.Cmd{Name: "env", Dir: "sub", Env: map[string]string{"EXTRA": "1", "CI": "false"}})
	require.NoError(t, err)
	out := string(res.Stdout)
	assert.Contains(t, out, "CI=false\n", "the command's own value wins over Env")
	assert.Contains(t, out, "EXTRA=1\n")
	assert.Contains(t, out, "NPM_TOKEN=[REDACTED]\n")
	assert.NotContains(t, out, "npm-secret-value-123")

	calls := f.script.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "/vercel/sandbox/repo/sub", calls[0].Cwd)
	assert.Equal(t, "npm-secret-value-123", calls[0].Env["NPM_TOKEN"])

	// The policy's timeout was sent with the command.
	var sent bool
	for _, req := range f.srv.Requests() {
		if strings.HasSuffix(req.Path, "/cmd") {
			assert.Contains(t, string(req.Body), `"timeout":90000`)
			sent = true
		}
	}
	assert.True(t, sent)
}

func TestGateTranscriptBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	chunk := strings.Repeat("x", 100) + "\n" // 101 bytes
	f.script.Handle(sandboxtest.MatchName("noisy"), sandboxtest.HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
		for range 20 { // 2020 bytes per command
			_, _ = cmd.Stdout.Write([]byte(chunk))
		}
		return 0
	}))
	p := basePolicy()
	p.MaxOutputPerCommand = 500
	p.MaxTranscript = 1200
	r, err := guard.NewGate(f.sb, p)
	require.NoError(t, err)

	for i := range 4 {
		res, err := r.Run(t.Context(), &command.Cmd{Name: "noisy", Args: []string{fmt.Sprint(i)}})
		require.NoError(t, err)
		assert.Len(t, res.Stdout, 500)
		assert.True(t, res.StdoutTruncated)
		assert.EqualValues(t, 2020, res.StdoutBytes)
	}
	tr := r.Transcript()
	require.Len(t, tr.Entries, 4)
	assert.True(t, tr.Truncated)
	assert.EqualValues(t, 1200, tr.OutputBytes)
	kept := []int{500, 500, 200, 0}
	for i, e := range tr.Entries {
		assert.True(t, e.Truncated, i)
		assert.EqualValues(t, 2020, e.OutputBytes)
		assert.Equal(t, strings.Repeat(chunk, 5)[:kept[i]]+guard.TruncationMarker(int64(2020-kept[i])), e.Output, "entry %d", i)
		require.NotNil(t, e.ExitCode, "every executed command is recorded")
	}

	// Negative bounds keep nothing, and still record the commands.
	p.MaxOutputPerCommand, p.MaxTranscript = -1, -1
	r2, err := guard.NewGate(f.sb, p)
	require.NoError(t, err)
	res, err := r2.Run(t.Context(), &command.Cmd{Name: "noisy"})
	require.NoError(t, err)
	assert.Empty(t, res.Stdout)
	assert.EqualValues(t, 2020, res.StdoutBytes)
	e := r2.Transcript().Entries[0]
	assert.Equal(t, guard.TruncationMarker(2020), e.Output)
	assert.EqualValues(t, 0, r2.Transcript().OutputBytes)
}

func TestGateConcurrentBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.script.Handle(sandboxtest.MatchName("noisy"), sandboxtest.Steps{}.
		Stdout(strings.Repeat("a", 300)).Stderr(strings.Repeat("b", 300)).Stdout(strings.Repeat("c", 300)))
	p := basePolicy()
	p.MaxOutputPerCommand = 700
	p.MaxTranscript = 2000
	r, err := guard.NewGate(f.sb, p)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			_, err := r.Run(t.Context(), &command.Cmd{Name: "noisy", Args: []string{fmt.Sprint(i)}})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	tr := r.Transcript()
	require.Len(t, tr.Entries, 8)
	assert.EqualValues(t, 2000, tr.OutputBytes)
	var sum int64
	for _, e := range tr.Entries {
		out := e.Output
		if i := strings.Index(out, "\n[… output truncated"); i >= 0 {
			out = out[:i]
		}
		assert.LessOrEqual(t, len(out), 700)
		sum += int64(len(out))
	}
	assert.EqualValues(t, 2000, sum)
	assert.Equal(t, 8, f.srv.CommandCount())
}

func TestGateInactivityIsRedacted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.script.Handle(sandboxtest.MatchName("go"), sandboxtest.Steps{}.Stdout("secret: "+secret+"\n").Block())
	r, err := guard.NewGate(f.sb, basePolicy())
	require.NoError(t, err)
	res, err := r.Run(t.Context(), &command.Cmd{Name: "go", Args: []string{"test"}, InactivityTimeout: 300 * time.Millisecond})
	assert.Nil(t, res)
	var ie *command.InactivityError
	require.ErrorAs(t, err, &ie)
	require.NotNil(t, ie.Result)
	assert.Equal(t, "secret: [REDACTED]\n", string(ie.Result.Stdout))
	e := r.Transcript().Entries[0]
	assert.Nil(t, e.ExitCode)
	assert.Contains(t, e.Error, "no output")
	assert.Equal(t, "secret: [REDACTED]\n", e.Output)
}

// failingTransport fails every command with an error whose message holds
// the secret.
type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/cmd") {
		return nil, f.err
	}
	return http.DefaultTransport.RoundTrip(r)
}

// failingExecutor returns a sandbox whose commands fail with err.
func failingExecutor(t *testing.T, err error) *sandbox.Sandbox {
	t.Helper()
	srv := sandboxtest.NewServer(t)
	sb, cerr := srv.Client(sandbox.WithTransport(failingTransport{err})).Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, cerr)
	return sb
}

func TestGateOtherErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("dial tcp: token %s refused: %w", secret, context.DeadlineExceeded)
	sb := failingExecutor(t, cause)
	r, err := guard.NewGate(sb, basePolicy())
	require.NoError(t, err)
	assert.Equal(t, sb.Cwd(), r.Workspace())
	_, err = r.Run(t.Context(), &command.Cmd{Name: "go", Args: []string{"vet"}})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	e := r.Transcript().Entries[0]
	assert.NotContains(t, e.Error, secret)
	assert.Nil(t, e.ExitCode)
}

func TestNewRunnerRejects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := guard.NewGate(nil, guard.Policy{})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = guard.NewGate(f.sb, guard.Policy{Workspace: "rel"})
	assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	_, err = guard.NewGate(f.sb, guard.Policy{}, guard.WithOutput(nil))
	assert.ErrorIs(t, err, apierr.ErrInvalidInput, "a nil output would be dropped silently")
	_, err = guard.NewGate(f.sb, guard.Policy{}, nil)
	assert.NoError(t, err, "a nil option is ignored")
}

// A transcript read back from JSON keeps its durations; bad text is
// refused without changing the value.
func TestDurationText(t *testing.T) {
	t.Parallel()
	d := guard.Duration(time.Second)
	var ie *sandbox.InputError
	require.ErrorAs(t, d.UnmarshalText([]byte("1 fortnight")), &ie)
	assert.Equal(t, "Duration", ie.Field)
	assert.Equal(t, guard.Duration(time.Second), d, "unchanged by bad text")
	require.NoError(t, d.UnmarshalText([]byte("1m30s")))
	assert.Equal(t, guard.Duration(90*time.Second), d)
}

// A Gate not made by NewGate refuses to run, instead of panicking.
func TestZeroGateRefuses(t *testing.T) {
	t.Parallel()
	for _, g := range []*guard.Gate{nil, {}} {
		_, err := g.Run(t.Context(), &command.Cmd{Name: "ls"})
		assert.ErrorIs(t, err, apierr.ErrInvalidInput)
		assert.ErrorIs(t, g.Check(&command.Cmd{Name: "ls"}), apierr.ErrInvalidInput)
		assert.Empty(t, g.Workspace())
	}
}

// A runner's Check agrees with Run and records nothing.
func TestGateCheck(t *testing.T) {
	t.Parallel()
	r, err := guard.NewGate(newFixture(t).sb, basePolicy())
	require.NoError(t, err)
	assert.NoError(t, r.Check(&command.Cmd{Name: "go", Args: []string{"vet", "./..."}}))
	assert.ErrorIs(t, r.Check(&command.Cmd{Name: "go", Args: []string{"build"}}), guard.ErrDenied)
	assert.Empty(t, r.Transcript().Entries)
	assert.Equal(t, "x [REDACTED]", r.Redactor().Redact("x "+secret))
}
