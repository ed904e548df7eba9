package sandbox_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	fwdproxy "github.com/sbx-go/vercel-sandbox/sandbox/proxy"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// inputCases is the table of TestInputContract.
func inputCases() []inputCase {
	var cs []inputCase
	for _, part := range [][]inputCase{
		sandboxCases(), filesCases(), commandCases(), ptyCases(), workloadCases(),
		guardCases(), authCases(), proxyCases(), localCases(),
	} {
		cs = append(cs, part...)
	}
	return cs
}

const (
	getter    = "reports state; takes no argument"
	noArgs    = "takes no argument but a context"
	optsOnly  = "takes only options, and a nil option is ignored"
	free      = "any value of its arguments is valid"
	kitOption = "any value is valid (zero or negative values have a documented meaning)"
)

// noInput lists the entry points that take no argument that could be
// malformed, with the reason.
var noInput = map[string]string{
	"sandbox.Sandbox.Name": getter, "sandbox.Sandbox.Cwd": getter, "sandbox.Sandbox.Info": getter,
	"sandbox.Sandbox.Routes": getter, "sandbox.Sandbox.Session": getter, "sandbox.Sandbox.Client": getter, "sandbox.Sandbox.SessionID": getter,
	"sandbox.User.Name": getter, "sandbox.User.Home": getter, "sandbox.Session.ExpiresAt": getter,
	"sandbox.Status.Terminal": getter, "sandbox.AllowAll": noArgs, "sandbox.DenyAll": noArgs,
	"sandbox.Sandbox.Refresh": noArgs, "sandbox.Sandbox.Resume": noArgs,
	"sandbox.Sandbox.Stop": noArgs, "sandbox.Sandbox.WaitStopped": noArgs, "sandbox.Sandbox.OpenInteractive": noArgs,
	"sandbox.Sandbox.Sessions": noArgs, "sandbox.Sandbox.Commands": noArgs, "sandbox.Sandbox.Delete": optsOnly,
	"sandbox.Sandbox.FS": getter, "sandbox.User.FS": getter,
	"sandbox.RoundTripFunc.RoundTrip": "calls the function with the request as given, as http.RoundTripper does",
	"sandbox.WithAutoResume":          free, "sandbox.WithOnResume": "a nil function reports nothing",
	"sandbox.WithLogger": "nil keeps the default (discard)", "sandbox.WithReattachPolicy": free,
	"sandbox.WithTeam": free, "sandbox.WithProject": free, "sandbox.WithUserAgent": free,

	"command.Handle.Kill": noArgs, "command.Result.ExitCode": getter,
	"command.Handle.ID": getter, "command.Handle.Ref": getter, "command.Handle.SessionID": getter,
	"command.Handle.Started": getter, "command.Info.Done": getter, "command.Result.Success": getter,
	"command.Handle.Info": noArgs, "command.Handle.Wait": noArgs, "command.Handle.Logs": noArgs,
	"command.Handle.Output": noArgs, "command.Handle.CopyOutput": "nil writers discard (documented)",

	"files.Entry.Mode": getter, "files.Entry.Path": getter, "files.Entry.Replayable": getter,
	"files.Entry.Size": getter,

	"pty.Session.Close": noArgs, "pty.Session.Wait": noArgs, "pty.Session.Write": "bytes are opaque",

	"workload.CodeInput.Timeout": getter, "workload.DefaultLanguages": noArgs, "workload.Error.UserMessage": getter,
	"workload.ErrorCode.Message": getter, "workload.ErrorCodeOf": "any error, nil included", "workload.LogObserver": "a nil logger discards",
	"workload.ObserverFuncs.PhaseEnd": "nil fields are skipped", "workload.ObserverFuncs.PhaseStart": "nil fields are skipped",
	"workload.Observers.PhaseEnd": "nil observers are skipped", "workload.Observers.PhaseStart": "nil observers are skipped",
	"workload.PhaseEvent.Outcome": getter, "workload.RefOf": "a nil sandbox gives the zero TaskRef, which StopTask refuses",
	"workload.Task.End": noArgs, "workload.Task.Err": getter, "workload.Task.Sandbox": getter,
	"workload.Task.Steps": getter, "workload.Task.StopErr": getter, "workload.Usage.Total": getter,

	"guard.Gate.Redactor": getter, "guard.Gate.Transcript": getter, "guard.Gate.Workspace": getter,
	"guard.NewRedactor": "empty secrets are ignored (documented)", "guard.Redactor.Redact": free,
	"guard.TruncationMarker": free, "guard.Writer.Close": noArgs, "guard.Writer.Held": getter, "guard.Writer.Write": "bytes are opaque",

	"fault.Fault.Matches": free, "fault.Handle.Fault": getter, "fault.Handle.Hits": getter, "fault.Handle.ID": getter,
	"fault.Handle.Remove": noArgs, "fault.Injector.ClearFaults": noArgs, "fault.Injector.Faults": getter,
	"fault.Injector.Options": getter, "fault.NewInjector": noArgs,

	"local.NoteFault": "a request without the server's context is left alone", "local.Server.Close": noArgs, "local.WithAnyToken": noArgs,
	"local.Server.CommandCount": getter, "local.Server.Commands": getter, "local.Server.DiskQuotaHeld": getter, "local.Server.Done": getter,
	"local.Server.Executor": getter, "local.Server.Handler": getter, "local.Server.LeakedSandboxes": getter,
	"local.Server.LiveGoroutines": getter, "local.Server.Memory": getter, "local.Server.Rand": free,
	"local.Server.Requests": getter, "local.Server.Sandbox": "an unknown name reports false",
	"local.Server.Sandboxes": getter, "local.Server.Session": "an unknown id reports false",
	"local.Server.Sessions": getter, "local.Server.Snapshots": getter, "local.Server.Token": getter, "local.Server.URL": getter,
	"local.WithClock": "nil means the real clock", "local.WithDiskQuota": kitOption, "local.WithEarlyStops": noArgs, "local.WithRefuseChunkedUploads": noArgs,
	"local.WithExecutor": "nil means no executor: commands end with 127 (documented)", "local.WithFriendly": noArgs,
	"local.WithHostPaths": free, "local.WithLogger": "nil discards", "local.WithProject": free, "local.WithSeed": free,
	"local.WithStreamCut": kitOption, "local.WithTeam": free, "local.WithToken": "empty accepts any token (documented)",

	"sandboxtest.Accounts.GroupsOf": free, "sandboxtest.Accounts.Users": getter, "sandboxtest.Call.CommandLine": getter,
	"sandboxtest.EchoHandler": noArgs, "sandboxtest.EnvHandler": noArgs, "sandboxtest.HandlerFunc.Run": "called by the executor",
	"sandboxtest.MatchArgs": free, "sandboxtest.MatchName": free, "sandboxtest.NewAccounts": noArgs,
	"sandboxtest.NewScript": optsOnly, "sandboxtest.Reply.Run": "called by the executor", "sandboxtest.Script.Calls": getter,
	"sandboxtest.Script.Start": "called by the server", "sandboxtest.Script.Unmatched": getter,
	"sandboxtest.ScriptFallback": "nil keeps the default (exit 127)", "sandboxtest.ScriptKillGrace": kitOption,
	"sandboxtest.Server.AssertNoLeakedSandboxes": "reports through t", "sandboxtest.Server.CheckLeaks": noArgs,
	"sandboxtest.Server.ClearFaults": noArgs, "sandboxtest.Server.Faults": getter, "sandboxtest.Server.RequestsTo": free,
	"sandboxtest.Server.Script": getter, "sandboxtest.Steps.Block": noArgs, "sandboxtest.Steps.Exit": free,
	"sandboxtest.Steps.Ignore": free, "sandboxtest.Steps.Run": "called by the executor", "sandboxtest.Steps.Sleep": kitOption,
	"sandboxtest.Steps.Stderr": free, "sandboxtest.Steps.Stdout": free,
	"sandboxtest.Steps.Await": "a nil channel waits for a signal, as Block", "sandboxtest.Accounts.Executor": "a nil fallback ends unknown commands with 127",
	"sandboxtest.Accounts.Install": "adds to the Script it is given",

	"auth.OIDCTokenFromContext": free, "auth.WithOIDCToken": free,
	"auth.OIDCProvider.Invalidate": free, "auth.Default": "zero options mean the environment", "auth.FromContext": noArgs,
	"vercelcli.ConfigDirs": free, "vercelcli.Default": "zero options mean the environment",
	"vercelcli.LinkedProjectRefresher.Invalidate": free, "vercelcli.LinkedProjectRefresher.Linked": noArgs,

	"proxy.FromContext": "any context; one without a Forwarded reports false",
}

// atCallPanics are the builders that return no error and report misuse as
// net/http.ServeMux.Handle does: with a panic at the call, never later
// inside the server. They are the test kit's builders, and the wrappers of
// an http.Handler (auth.Middleware, fwdproxy.Verifier.Handler), whose handler
// could report misuse only to the HTTP client, at serve time. A builder
// that returns a value with errors of its own (auth.Chain, auth.FromEnv,
// guard.Redactor.Writer) reports misuse through them, at the first call.
// Each gives what the panic must say.
var atCallPanics = map[string]struct {
	call func(t testing.TB)
	says string
}{
	"sandboxtest.Script.Handle":   {func(testing.TB) { sandboxtest.NewScript().Handle(nil, sandboxtest.Reply{}) }, "must not be nil"},
	"sandboxtest.Script.Override": {func(testing.TB) { sandboxtest.NewScript().Override(sandboxtest.MatchName("x"), nil) }, "must not be nil"},
	"sandboxtest.Sequence":        {func(testing.TB) { sandboxtest.Sequence() }, "at least one handler"},
	"auth.Middleware":             {func(testing.TB) { auth.Middleware(nil) }, "must not be nil"},
	"proxy.Verifier.Handler": {func(t testing.TB) {
		v, err := fwdproxy.NewVerifier()
		if err != nil {
			t.Fatal(err)
		}
		v.Handler(nil)
	}, "must not be nil"},
	"sandboxtest.MatchRegexp": {func(testing.TB) { sandboxtest.MatchRegexp((*regexp.Regexp)(nil)) }, "regular expression"},
	"fault.Injector.Inject": {func(testing.TB) { fault.NewInjector().Inject(fault.Fault{Status: 429, AfterHandler: true}) },
		"contradicts the API contract"},
	"sandboxtest.Server.Inject": {func(t testing.TB) { sandboxtest.NewServer(t).Inject(fault.Fault{Times: -1}) }, "negative"},
	"sandboxtest.NewServer":     {func(t testing.TB) { sandboxtest.NewServer(fatalTB{t}, local.WithStopDelay(-1)) }, "WithStopDelay"},
	"sandboxtest.Server.Client": {func(t testing.TB) {
		sandboxtest.NewServer(fatalTB{t}).Client(sandbox.WithHTTPClient(nil))
	}, "WithHTTPClient"},
}

// fatalTB is a testing.TB whose Fatalf panics, to observe sandboxtest's
// reports of misuse.
type fatalTB struct{ testing.TB }

func (fatalTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func TestInputContractTestKitPanicsAtTheCall(t *testing.T) {
	t.Parallel()
	for entry, c := range atCallPanics {
		var got any
		func() {
			defer func() { got = recover() }()
			c.call(t)
		}()
		assert.Contains(t, fmt.Sprint(got), c.says, "%s reports misuse at the call", entry)
	}
}
