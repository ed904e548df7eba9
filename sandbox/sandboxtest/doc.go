// Package sandboxtest is the test kit for code that uses the Vercel Sandbox
// API, in the spirit of net/http/httptest: a local API for one test
// (package sandbox/local), scripted commands, faults and a leak check.
//
// # The server and its client
//
// NewServer starts a local API for one test and closes it when the test
// ends, killing every process and ending every goroutine it started.
// Server.Client returns a *sandbox.Client aimed at it, with fast retries;
// any other client (the TypeScript SDK, curl) can use URL and Token
// instead. The options are those of package local; the inspection methods
// (Commands, Requests, Sandboxes, ...) are those of local.Server.
//
//	func TestDeploy(t *testing.T) {
//		srv := sandboxtest.NewServer(t) // scripted commands by default
//		client := srv.Client()
//		sb, err := client.Create(t.Context(), sandbox.CreateParams{Name: "deploy"})
//		...
//	}
//
// # Scripted commands
//
// Unless local.WithExecutor says otherwise, the server plays a Script:
// handlers registered by Matcher (MatchName, MatchArgs, MatchRegexp or any
// func(*local.Cmd) bool) answer with a Reply, a sequence of Steps (output,
// pauses, exit), a Sequence of handlers for successive calls, or a
// HandlerFunc of your own. Override replaces a handler for one test; Calls
// and Unmatched tell what ran. A command nothing matches exits 127. See
// ExampleScript.
//
//	srv.Script().Handle(sandboxtest.MatchArgs("npm", "ci"), sandboxtest.Reply{Stdout: "added 1 package\n"})
//
// The file calls of package sandbox that run commands (Stat, ReadDir,
// Walk, MkdirTemp, RemoveAll, Rename, Chmod, Symlink, ...) need no
// script: a Script plays them itself, on the sandbox's files, when no
// handler matches (see Script and ExampleScript_fileCalls).
//
// Real commands run with local.WithExecutor(hostexec.New()) or the
// isolated executor (packages sandbox/local/hostexec and
// sandbox/local/isolated).
//
// Accounts plays users and groups (useradd, groupadd, usermod, gpasswd,
// id, sudo -u) for the user calls of package sandbox: Install adds its
// handlers to a Script, and Executor plays them in front of a real
// executor so that the host's accounts are never touched.
//
// # Faults
//
// Server.Inject adds a fault.Fault: an error status, a 429 with
// Retry-After, latency, a connection reset, an NDJSON stream cut after N
// frames, a stalled body, a session that expires mid-work. The server also
// serves the control endpoint of package fault, so that tests in other
// languages can inject faults over HTTP.
//
//	srv.Inject(fault.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 500, Times: 1})
//
// # Leak checks
//
// A sandbox that is neither stopped nor deleted keeps running, and
// costing, on the real service until its timeout. CheckLeaks makes the
// test fail when the code under test leaves one running;
// AssertNoLeakedSandboxes does the same on demand, naming each sandbox,
// its sessions and the request that created it.
//
// # Related packages
//
// Package conformance runs the scenarios every API must pass against any
// client; package cassette records API traffic and replays it with no
// server at all.
package sandboxtest
