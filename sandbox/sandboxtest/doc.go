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
// # Use in a test
//
//	func TestDeploy(t *testing.T) {
//		srv := sandboxtest.NewServer(t) // scripted executor by default
//		srv.Script().Handle(sandboxtest.MatchName("npm"), sandboxtest.Reply{Stdout: "ok\n"})
//		client := srv.Client() // a *sandbox.Client aimed at the fake
//		// ... or point any other client at the fake:
//		//   base URL: srv.URL()   (with or without /api)
//		//   token:    srv.Token() (any team and project ids are accepted)
//		...
//		if n := srv.CommandCount(); n != 1 {
//			t.Fatalf("ran %d commands, want 1", n)
//		}
//	}
//
// NewServer closes the fake when the test ends, killing every process and
// ending every goroutine it started. Outside tests use New, Serve and Close.
//
// Tests can inspect and steer the fake: Sandboxes, Sessions, Snapshots,
// Commands, Output and Requests (every request received, secrets
// redacted) report its state; Stop and ExpireSession end a session so that
// the next session call answers 410 Gone; WithClock injects time, and
// WithStopDelay makes the stopping state (422) observable.
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
//   - Isolation: commands run wherever the Executor runs them. The local
//     executor runs them as host processes with your privileges; sudo is
//     passed to the executor, not honoured by the fake.
//   - Interactive sessions: POST …/interactive answers 400 bad_request.
//   - Network policies are stored and reported, never enforced; exposed
//     ports get routes on vercel.run that lead nowhere.
//   - Sources: git and tarball sources are accepted but the sandbox starts
//     empty; images and runtimes are reported, not provided.
//   - Regions and failover, plans, billing, quotas, rate limits, concurrency
//     limits and usage figures (CPU time and network transfer are 0).
//   - Drives and mounts (mounts are stored and echoed only), the v1 API,
//     listing commands and writing to a command's stdin.
//   - Per-project namespaces: names are unique across the whole fake.
//   - keepLastSnapshots only evicts by count; its expiration is ignored.
package sandboxtest
