// Package sandboxtest is an in-process fake of the Vercel Sandbox REST API
// for integration tests that need no Vercel account.
//
// The fake speaks the wire protocol of the real API closely enough that the
// official TypeScript SDK (@vercel/sandbox 3.x) accepts it: the same paths
// (with or without the /api prefix), JSON shapes, NDJSON streams, status
// codes and error bodies. Sandboxes, sessions, commands and snapshots are
// kept in memory; each sandbox's filesystem is a directory on the host, and
// commands are run by an Executor: scripted handlers for exact control of
// output and timing, real host processes, or one of your own.
//
// # The fake and its client
//
// NewServer starts a fake for one test and closes it when the test ends,
// killing every process and ending every goroutine it started. Client
// returns a *sandbox.Client aimed at it, with fast retries; any other
// client (the TypeScript SDK, curl) can use URL and Token instead, with any
// team and project ids. Outside tests use New, Serve and Close (see
// ExampleNew).
//
//	func TestDeploy(t *testing.T) {
//		srv := sandboxtest.NewServer(t) // scripted executor by default
//		client := srv.Client()
//		sb, err := client.Create(t.Context(), sandbox.CreateParams{Name: "deploy"})
//		...
//	}
//
// # Scripted commands
//
// Without WithExecutor the fake plays a Script: handlers registered by
// Matcher (MatchName, MatchArgs, MatchRegexp or any func(*Cmd) bool)
// answer with a Reply, a sequence of Steps (output, pauses, exit), a
// Sequence of handlers for successive calls, or a HandlerFunc of your own.
// Override replaces a handler for one test; Calls and Unmatched tell what
// ran. A command nothing matches exits 127. See ExampleScript.
//
//	srv.Script().Handle(sandboxtest.MatchArgs("npm", "ci"), sandboxtest.Reply{Stdout: "added 1 package\n"})
//
// # Real commands
//
// NewLocalExecutor runs each command as a real host process in the
// sandbox's directory, with a clean environment: real shells, exit codes,
// signals and streaming. It is not isolation (see LocalExecutor and the
// list below). See ExampleNewLocalExecutor. On Linux with unprivileged user
// namespaces, NewIsolatedExecutor runs each command in namespaces of its
// own, with a private root filesystem in which the sandbox's tree sits at
// its sandbox paths (/vercel/sandbox, /tmp, ...), and per-command limits;
// NewBestExecutor picks it where it works and the local one elsewhere.
//
//	exec, mode := sandboxtest.NewBestExecutor()
//	t.Logf("commands run %s", mode)
//	srv := sandboxtest.NewServer(t, sandboxtest.WithExecutor(exec))
//
// # Inspection
//
// Sandboxes, Sessions, Snapshots, Commands, CommandCount, Output and
// Requests (every request received, secrets redacted) report the fake's
// state; Commands lists each command once, so a test can prove that a
// retry did not run a command twice. Stop and ExpireSession end a session
// so that the next session call answers 410 Gone; WithClock injects time,
// WithSeed makes ids reproducible and WithStopDelay makes the stopping
// state (422) observable.
//
//	if n := srv.CommandCount(); n != 1 {
//		t.Fatalf("ran %d commands, want 1", n)
//	}
//
// # Faults
//
// Server.Inject adds a Fault: an error status, a 429 with Retry-After,
// latency, a connection reset, an NDJSON stream cut after N frames, a
// stalled body, a session that expires mid-work. The Fault type documents
// each one and its text form (also accepted by the standalone server).
// RateLimit builds a burst of 429s. With WithControl, tests in other
// languages inject faults and read the request log over HTTP (see
// ControlPrefix); Request.Fault marks the requests a fault shaped.
//
//	srv.Inject(sandboxtest.Fault{Method: "POST", Path: "/v2/sandboxes/sessions/*/cmd", Status: 500, Times: 1})
//
// # Record and replay
//
// The cassette subpackage records the HTTP traffic of a test (against the
// fake or the real API) to a file and replays it later with no server at
// all, streams included, frame by frame. Its transport goes under the
// client:
//
//	c := cassette.New(t, "testdata/deploy.jsonl") // SANDBOXTEST_CASSETTE=record|replay|auto
//	client := srv.Client(sandbox.WithTransport(c.Transport(nil)))
//
// Ids, timestamps, team and project are normalised and secrets redacted,
// so that a scenario with reproducible ids (WithSeed) and time (WithClock)
// records to the same bytes every time. See the cassette package's
// examples.
//
// # Conformance suite
//
// RunConformance runs one set of scenarios (life cycle, attached and
// detached commands, files, resume after stop, typed errors) against
// whatever API a client talks to. This package runs the same scenarios
// against the fake (with the local and with the isolated executor), against
// a replayed cassette and, when SANDBOXTEST_LIVE=1 and Vercel credentials
// are set, against the real service. Point it at your own fake, proxy or
// recording the same way (see ExampleRunConformance). Each scenario sends
// the same requests on every run, so a run can be recorded and replayed;
// sandbox names start with a prefix of your choice (ConformancePrefix).
//
//	srv := sandboxtest.NewServer(t, sandboxtest.WithExecutor(sandboxtest.NewLocalExecutor()))
//	sandboxtest.RunConformance(t, func(*testing.T) *sandbox.Client { return srv.Client() })
//
// # Leak checks
//
// A sandbox that is neither stopped nor deleted keeps running, and
// costing, on the real service until its timeout. WithLeakCheck makes
// NewServer fail the test when the code under test leaves one running
// (after the test's own cleanups); AssertNoLeakedSandboxes and
// LeakedSandboxes do the same on demand, naming each sandbox, its
// sessions and, when it had an explicit name, the request (and User-Agent)
// that created it. LiveGoroutines counts the fake's own background work;
// it is 0 once Close returns. See ExampleServer_LeakedSandboxes.
//
//	srv := sandboxtest.NewServer(t, sandboxtest.WithLeakCheck())
//
// # Filesystem
//
// By default paths are virtual: sessions work in /vercel/sandbox and a
// sandbox path P is stored at HostPath(name, P). With WithHostPaths(true) a
// session's working directory is the sandbox's host directory itself, so
// that real host processes see the same paths as the client; paths outside
// that directory are refused. A stopped sandbox keeps its directory, and a
// resume reuses it; snapshots are copies of the directory, restored when a
// sandbox is created from one or its current snapshot is moved. A path that
// would leave the sandbox's directory (in host-path mode, or through a
// symbolic link) answers 400 bad_request, for fs/read too.
//
// # What it does not emulate
//
//   - A microVM: commands run wherever the Executor runs them. The local
//     executor runs them as host processes with your privileges, your
//     network and your whole filesystem (absolute paths in commands are
//     host paths); sudo is passed to the executor, not honoured by the
//     fake. The isolated executor shares the host's kernel and its /usr,
//     and gives each command (not each session) its own namespaces.
//   - The image: a command finds only what the host (or the Script) has;
//     runtimes and images are reported, not provided.
//   - Resource limits: vCPUs and memory are reported, not enforced by the
//     fake (the isolated executor applies limits of its own, per command),
//     and usage figures (active CPU, network transfer) are always 0.
//   - Real timing: sessions boot and stop at once (WithStopDelay adds a
//     delay), and snapshots are directory copies. Session timeouts and
//     per-command timeouts are enforced.
//   - Interactive sessions: POST …/interactive answers 400 bad_request.
//   - Network policies are validated, stored and reported; only the
//     isolated executor acts on them, and only as loopback-only versus
//     allow-all (domain and subnet rules are not emulated). Exposed ports
//     get routes on vercel.run that lead nowhere.
//   - Sources: git and tarball sources are accepted but the sandbox starts
//     empty.
//   - Regions and failover, plans, billing, quotas, rate limits and
//     concurrency limits (inject a Fault to see a 429).
//   - Drives and mounts (mounts are stored and echoed only), the v1 API,
//     listing commands and writing to a command's stdin.
//   - Per-project namespaces: names are unique across the whole fake.
//   - keepLastSnapshots only evicts by count; its expiration is ignored.
package sandboxtest
