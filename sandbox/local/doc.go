// Package local serves the Vercel Sandbox REST API on this machine.
//
// It speaks the wire protocol of the real API closely enough that the
// official TypeScript SDK (@vercel/sandbox 3.x) accepts it: the same paths
// (with or without the /api prefix), JSON shapes, NDJSON streams, status
// codes and error bodies. Sandboxes, sessions, commands and snapshots are
// kept in memory; each sandbox's filesystem is a directory on the host, and
// commands are run by an Executor: package hostexec runs host processes,
// package isolated runs each in a bubblewrap sandbox of its own, and
// sandboxtest.Script plays scripted handlers.
//
// # Hostile commands
//
// Whatever a command leaves in its sandbox's tree, the server's own file
// operations (fs/read, fs/write, fs/mkdir, the working directory of a
// command, snapshots) resolve every path inside the sandbox's directory
// and never follow a link out of it, and they refuse FIFOs, sockets and
// devices without blocking on them; a stop ends the uploads in flight, so
// Stop and Close complete whatever a command or a client left behind.
// Each sandbox has a disk quota (WithDiskQuota), held by the kernel
// where it can be (a file system of the sandbox's own, on a loop device)
// and watched elsewhere; DiskQuotaHeld says which. The data directory's
// sandboxes and snapshots are readable by the server's user only.
//
// # The server and its client
//
// Listen starts a server on a loopback port (127.0.0.1:0) and returns it
// with a *sandbox.Client aimed at it; Close kills every process and ends
// every goroutine the server started.
//
//	srv, client, err := local.Listen(ctx, local.WithExecutor(hostexec.New()), local.WithHostPaths(true))
//	...
//	defer srv.Close()
//
// New returns a server that does not listen yet, for a listener or
// address of your own: Serve or Start answer requests on a listener, and
// Handler lets a server of your own mount it. Any other client (another
// process, the TypeScript SDK, curl) uses URL and Token, with any team and
// project ids. Tests use sandboxtest.NewServer, which does all of that for
// one test.
//
// The server accepts one bearer token: a random one drawn by New (Token
// reports it), or that of WithToken. WithAnyToken accepts any, which suits
// tests only: sandboxtest.NewServer and the sandboxtest-server command
// (without --token) take any token.
//
// # Inspection
//
// Sandboxes, Sessions, Snapshots, Commands, CommandCount, Output and
// Requests (the 10,000 most recent requests by default, secrets redacted)
// report the server's state; Commands lists each command once, so a test
// can prove that a retry did not run a command twice. LeakedSandboxes
// lists the sandboxes still running although nobody stopped or deleted
// them. Stop and ExpireSession end a session so that the next session
// call answers 410 Gone; WithClock injects time, WithSeed makes ids
// reproducible and WithStopDelay makes the stopping state (422)
// observable.
//
// # Extensions
//
// WithMiddleware wraps the route table (package fault injects faults this
// way) and WithMount serves a handler of your own beside the API.
//
// # Filesystem
//
// By default paths are virtual: sessions work in /vercel, as on hosted
// Vercel, or in /vercel/sandbox when the sandbox was created with a legacy
// runtime (and always with WithFriendly); a sandbox path P is stored at
// HostPath(name, P). With WithHostPaths(true) a
// session's working directory is the sandbox's host directory itself, so
// that real host processes see the same paths as the client; paths outside
// that directory are refused. A stopped sandbox keeps its directory (and
// its file system, when its quota is held), and a resume reuses it;
// snapshots are copies of the directory, kept outside any quota, restored when a
// sandbox is created from one or its current snapshot is moved. A path that
// would leave the sandbox's directory (in host-path mode, or through a
// symbolic link) answers 400 bad_request, for fs/read too.
//
// # Hosted Vercel, not the mock
//
// By default the server answers as hosted Vercel does where users and
// recordings have seen it differ from the API reference and the official
// mock. WithFriendly turns all of this off, for tests that need the kinder
// answers. Each behaviour, and where it was seen:
//
//   - Streams (an attached run, a log stream, a wait) are cut without
//     their final frame after DefaultStreamCut (6 minutes; WithStreamCut),
//     measured on the server's clock, so an injected clock scales it
//     (vercel-labs/agent-eval#115: 28 runs cut between 363 and 428 s).
//   - A wait (GET …/cmd/{cid}?wait=true) sends its headers only when the
//     command ends (vercel/sandbox#172).
//   - A command whose session ends (stop, timeout) ends its attached stream
//     with the error frame sandbox_stream_closed, not a final frame, and
//     its wait answers 410 (remotion-dev/remotion#7231).
//   - Commands of a stopped session, and their logs, answer 410
//     (vercel/sandbox#338).
//   - With WithLogsRace, the logs of a command answer 404 for a while
//     after it ends, on the server's clock, as they race the command's
//     cleanup (getsentry/junior#992).
//   - A repeated stop answers 200 with the stopped session, not 410, as
//     the official mock does too. With WithClock, every answer's Date
//     header is on the server's clock as well.
//   - A snapshot answers 201. With WithEarlyStops, it answers while the
//     session is still snapshotting, and a persistent stop answers while
//     the session is still stopping, with the old currentSnapshotId
//     (superset-sh/superset, docs/cloud-sandbox-mismatches.md;
//     vercel/sandbox#159 says a stop blocks); the session stops just after.
//   - A sandbox created with an image, or with neither image nor runtime,
//     works in /vercel, with HOME /vercel for its commands, not in
//     /vercel/sandbox (arugula-salad/wisp, e2e/providers/vercel/golden).
//   - Log frames are written data first: {"data":…,"stream":…}.
//   - Resuming a non-persistent sandbox answers 400 snapshot_not_found
//     (recorded in arugula-salad/wisp, docs/providers/vercel.md).
//   - Kill signals the command's process only, not its process group, when
//     the Process is a LeaderSignaler (wisp, vercel-differences.md).
//   - A missing executable is refused with 400 executable_not_found, with
//     no command and no exit code, when the Executor reports a
//     NotFoundError (vercel/vercel-py's live tests).
//   - mkdir failures answer 400 file_error, and fs/mkdir accepts
//     recursive: true.
//   - Every answer carries x-ratelimit-limit, -remaining and -reset;
//     WithCreateRateLimit limits creates per window as hosted Vercel does
//     (20 a window).
//   - The longest session timeout is 24 hours (WithMaxTimeout).
//   - A JWT bearer token whose exp has passed (on the server's clock)
//     answers 403 with invalidToken: true, not 401 (vercel/sandbox#192,
//     #247).
//   - With WithFreshTokenRefusals, a token the server has not seen is
//     refused with 401 for its first requests, as hosted Vercel briefly
//     refuses a fresh token (vercel/sandbox#192, #247).
//   - An env object above 4 KB as JSON answers 400 "env payload too
//     large", on create and on a command.
//
// # Differences from hosted Vercel
//
// This is the one list of what the server, in its default mode, does
// differently from hosted Vercel:
//
//   - Isolation: commands run wherever the Executor runs them. hostexec
//     runs host processes with your privileges, network and whole
//     filesystem (absolute paths in commands are host paths); sudo is
//     passed to the executor, not honoured by the server. isolated shares
//     the host's kernel and /usr, and gives each command, not each
//     session, its own namespaces: background processes end with their
//     command, and two commands reach each other over the network only
//     with allow-all. Neither is a virtual machine.
//   - The image: a command finds what the host (or a test's script) has;
//     runtimes and images are reported, not provided, and architecture is
//     the host's.
//   - Resources: vCPUs and memory are reported, not enforced by the server
//     (isolated applies limits of its own, per command); usage figures
//     (active CPU, network transfer) are always 0.
//   - Timing: sessions boot and stop at once (WithStopDelay adds a delay)
//     and snapshots are directory copies. Session and command timeouts are
//     enforced.
//   - Terminals need an executor that implements TTYExecutor (hostexec,
//     isolated); otherwise POST …/interactive, and a create or fork with
//     the private field "__interactive": true (which the official CLI
//     sends), answer 400. Hosted Vercel reports interactivePort on every
//     session; here only a sandbox created with "__interactive" does
//     (8443, with a route). Tickets are single-use, the WebSocket is served
//     by this server under /local/pty/, and GET /health answers 200 on the
//     same host; the CLI probes https://HOST/health on port 443, whatever
//     the port of the ticket's URL.
//   - Network policies are validated, stored and reported; only isolated
//     acts on them, and only as loopback-only versus allow-all (domain and
//     subnet rules are not emulated). A sandbox without a policy reports
//     what its commands get: deny-all with isolated (its own loopback),
//     allow-all otherwise (see NetworkReporter). Exposed ports get routes on
//     vercel.run that lead nowhere.
//   - Sources: git and tarball sources are accepted, and the sandbox starts
//     empty.
//   - Drives are records (get-or-create, get, list, delete) with no data.
//     A create, fork or update that mounts one is refused with 400: no
//     executor can show a drive at its mount path (for hostexec an
//     absolute path is the host's), and a copy would not be a live volume.
//   - Regions and failover, plans, billing, and rate and concurrency limits
//     other than the create limit (inject a Fault to see a 429); the only
//     quota is the disk quota of WithDiskQuota.
//   - Not served: the v1 API and writing to a command's stdin.
//   - Users: a sandbox has its own account files (passwd, group, shadow,
//     gshadow in Cmd.EtcDir) and base folders (/tmp, /root,
//     /home/vercel-sandbox, /vercel/sandbox), but whether useradd can change
//     them is up to the executor; hostexec refuses account tools.
//   - Names are unique across the whole server, not per project.
//   - Snapshots: keepLastSnapshots evicts by count only (its expiration is
//     ignored), and deleteOrphanSnapshots deletes at once, not
//     asynchronously.
//   - File names are kept as sent: a backslash in an uploaded name is part
//     of the name (a\b.txt is one file), as commands, Stat and Walk see
//     it. How hosted Vercel extracts such a name is not recorded.
//   - Log replay is bounded: the output kept is bounded per command
//     (WithOutputLimit) and in total (WithOutputBudget), oldest evicted
//     first, and released when its session stops. A replay that needs
//     evicted output ends with an error frame of code "output_evicted".
//     Memory reports what is kept.
package local
