// Package sandbox is a Go client for Vercel Sandbox: isolated Linux
// microVMs that run untrusted or heavy code.
//
// A [Client] holds credentials and the HTTP transport; it creates, finds,
// lists and deletes sandboxes. A [*Sandbox] is a handle to one named
// sandbox and its current session: run commands in it, read and write its
// files, extend, snapshot or stop it. Every call that does I/O takes a
// context first; cancelling it ends the call.
//
//	client, err := sandbox.NewClient() // credentials from the environment
//	if err != nil {
//		return err
//	}
//	sb, err := client.Create(ctx, sandbox.CreateParams{
//		Runtime: "node24", // or Image: "vercel/sandbox/universal"
//		VCPUs:   4,
//		Timeout: 10 * time.Minute,
//		Ports:   []int{3000},
//	})
//	if err != nil {
//		return err
//	}
//	defer sb.Stop(context.WithoutCancel(ctx)) // a sandbox already stopped is fine
//
// # Clients and credentials
//
// [NewClient] without [WithCredentials] uses vercelcli.Default, which
// takes the first of: an explicit token, team and project; an OIDC token
// in the request context (auth.WithOIDCToken, or auth.Middleware copying
// the x-vercel-oidc-token header on Vercel Functions); the file named by
// VERCEL_OIDC_TOKEN_FILE; VERCEL_OIDC_TOKEN (what vercel env pull writes
// into .env.local, which this package does not load); VERCEL_TOKEN with
// VERCEL_TEAM_ID and VERCEL_PROJECT_ID; a token minted for the project
// linked in .vercel/project.json with the Vercel CLI's login. OIDC tokens
// are refreshed five minutes before they expire, one refresh for any
// number of concurrent callers; the CLI's auth.json is never written or
// wiped. [WithToken] with [WithTeam] and [WithProject] is the short form
// for an access token. Without [WithBaseURL], the base URL is read, next
// to the credentials, from VERCEL_SANDBOX_BASE_URL ([EnvBaseURL]) when
// set, so that any program reaches a local server without a flag of its
// own; it obeys the plain-HTTP rule below as WithBaseURL does:
//
//	VERCEL_SANDBOX_BASE_URL=http://127.0.0.1:4000 VERCEL_TOKEN=any \
//	VERCEL_TEAM_ID=team_sandboxtest VERCEL_PROJECT_ID=prj_sandboxtest go run .
//
// The mint, OAuth discovery and token endpoints follow the plain-HTTP
// rule below, are never redirected, and their answers are bounded
// (vercelcli.LinkedProjectRefresher.MaxResponseSize, default 1 MiB).
//
// Bring your own *http.Client ([WithHTTPClient]: its Transport is used,
// its Timeout bounds non-streaming calls only) or http.RoundTripper
// ([WithTransport]); add [WithMiddleware]; set [WithBaseURL], [WithTeam],
// [WithProject], [WithUserAgent], [WithLogger]. Credentials are refused
// over plain HTTP except to a literal loopback address or the name
// localhost, which is dialled at 127.0.0.1, then ::1, never looked up nor
// proxied. Redirects are never followed. An answer read whole is bounded
// by [WithMaxResponseSize] (default 8 MiB).
//
// Requests that are safe to repeat (GET, DELETE, stop, kill, waits, file
// reads, replayable file writes) are retried on network errors, 429 and
// 5xx: at most 3 attempts, jittered exponential backoff from 400 ms,
// honouring Retry-After up to 20 s ([RetryPolicy], [WithRetryPolicy]).
// Requests that are not safe to repeat (create, fork, run a command,
// extend, snapshot) are sent again only after a dial error or a 429, which
// prove the server did nothing. Nothing is retried after ctx ends; a
// Retry-After beyond [RetryPolicy].MaxRetryAfter returns the 429 at once as
// ErrRateLimited. Every retry is logged and reported to RetryPolicy.OnRetry. [Client.Create] is safe to retry all the
// same: a create whose outcome is unknown is resolved by looking its name
// up (a name is generated when none is given), so it never makes two
// sandboxes.
//
// # Sandboxes
//
// Besides Create: [Client.Get], [Client.Resume], [Client.GetOrCreate], and
// the listings [Client.List], [Client.ListSessions] and
// [Client.ListSnapshots], iterators (iter.Seq2) that follow pagination. A
// Sandbox can [Sandbox.Update], [Sandbox.Fork], [Sandbox.ExtendTimeout]
// (a session lasts at most 24 hours), [Sandbox.SetNetworkPolicy] (a typed
// request, validated), [Sandbox.Snapshot] and [Sandbox.Delete];
// [Client.GetSnapshot], [Client.DeleteSnapshot] and [Client.SnapshotTree]
// (a snapshot's lineage and siblings) work with snapshot ids. Drives
// outlive sandboxes ([Client.GetOrCreateDrive], mounted with
// [Drive.Mount] in [CreateParams].Mounts). A program that stored only a
// name or a session id stops a sandbox from another process with
// [Client.Stop] (by name) or [Client.StopSession] (by session id), and
// probes it with [Client.Health] (by name) or [Client.SessionHealth] (by
// session id): healthy, stopped or not found, and whether to recreate it.
// A Client method's name says which key it takes: those that take a
// session id say Session ([Client.GetSession],
// [Client.ExtendSessionTimeout], [Client.SetSessionNetworkPolicy],
// [Client.SnapshotSession], [Client.OpenSessionInteractive]).
//
// # Commands
//
// [Sandbox.Command] returns a *command.Cmd bound to the sandbox, as
// exec.Command does; [User.Command] binds it to a user too. Cmd.Run runs
// it attached: its output reaches Cmd.Stdout and Cmd.Stderr as it arrives
// (a line of any length comes in pieces, in bounded memory), Cmd.Env
// reaches only that command, Cmd.Timeout is enforced inside the sandbox
// and Cmd.InactivityTimeout kills a command that prints nothing for that
// long. Cmd.Output and Cmd.CombinedOutput return the output, as os/exec
// does. Cancelling the context kills the remote command, unless
// Cmd.DetachOnCancel is set.
//
//	out, err := sb.Command("uname", "-a").Output(ctx)
//
// Cmd.Start runs it detached and returns a *command.Handle, whose Wait
// honours the same fields as Run: store its Ref as a string
// ("sandbox/session/command"), reattach to it from another process
// ([Client.Attach], or [Sandbox.Attach] by command id), replay its logs
// from the start and follow them, wait for it, signal it (Handle.Signal)
// or kill it (Handle.Kill, SIGKILL).
//
// Hosted Vercel cuts every stream after about six minutes. When an
// attached run, a log stream or a wait ends without proving that the
// command finished, the client re-attaches, never by running the command
// again: each output byte reaches the writers once, or the call returns
// an [*OutputLostError] saying what was lost ([WithReattachPolicy]).
//
// # Files
//
// [Sandbox.FS] returns the sandbox's [*FileSystem], and [User.FS] one that
// acts as a user; the file calls are its methods, with the names and
// shapes of os and io/fs. [FileSystem.WriteFile] writes bytes with a mode
// and [FileSystem.ReadFile] reads them back; [FileSystem.Open] streams a
// file and [FileSystem.DownloadFile] copies one to a local path.
// [FileSystem.WriteFiles] uploads entries of package files (from bytes,
// readers, local files and directory trees) as one streamed tar.gz, in
// bounded memory whatever the size: a tree from files.FromDir is read
// only as it is sent, and a reader's entry is sent once, never replayed.
// The io/fs vocabulary works on sandbox paths: [FileSystem.Stat] (whose
// FileInfo.Sys is a [*FileStat] with the owner and link target),
// [FileSystem.ReadDir], [FileSystem.Walk], [FileSystem.Rename],
// [FileSystem.Remove], [FileSystem.Chmod], [FileSystem.Symlink],
// [FileSystem.Mkdir], [FileSystem.MkdirAll], [FileSystem.MkdirTemp] and
// the rest, with errors that match fs.ErrNotExist and fs.ErrExist;
// [FileSystem.DirFS] is an fs.FS (and fs.ReadLinkFS) of a sandbox
// directory, for template.ParseFS, os.CopyFS and the like. Relative paths
// are in the session's working directory ([Sandbox.Cwd]), or the user's
// home for [User.FS].
//
//	err := sb.FS().WriteFile(ctx, "hello.txt", []byte("hi\n"), 0o644)
//
// Users and groups are made as the official SDK makes them
// ([Sandbox.CreateUser], [Sandbox.AsUser], [Sandbox.CreateGroup],
// [User.AddToGroup], [User.RemoveFromGroup]): a [*User] runs commands
// ([User.Command]) and file calls ([User.FS]) as that user, in its home; a
// name that exists already is an [*AccountError] matching [ErrUserExists].
//
// # Errors
//
// Errors are typed, for errors.Is and errors.As:
//
//   - a non-2xx answer is an [*APIError]: status, code, message, request id
//     (X-Vercel-Id), method, path, sandbox and session. It matches
//     [ErrNotFound] (404), [ErrGone] (410), [ErrStopping] (422
//     sandbox_stopping), [ErrRateLimited] (429, with APIError.RetryAfter and
//     APIError.RateLimit), [ErrUnauthorized], [ErrForbidden],
//     [ErrBadRequest], [ErrConflict] or [ErrServer];
//     [ErrSnapshotNotFound] means the sandbox cannot be resumed, and
//     [ErrExecutableNotFound] that no command ran;
//   - a create, run, extend or snapshot whose outcome is unknown is an
//     [*OutcomeUnknownError] ([ErrUnknownResult]) holding the sandbox name
//     and session id to recover with; it is never sent again;
//   - a stream that ends before its final frame and cannot be followed
//     again, or an error frame, is a [*StreamError] ([ErrStreamEnded], or
//     [ErrGone] for the frames sandbox_stopped and sandbox_stream_closed); a final frame or wait answer
//     about another command is a StreamError with code command_mismatch.
//     No exit code is ever invented;
//   - output that cannot be delivered whole (a replay that disagrees with
//     what was delivered, logs that never come back) is an
//     [*OutputLostError] ([ErrOutputLost]) naming the stream and the byte
//     offset, never a spliced or shortened output;
//   - a run that ends before its command (ctx, inactivity, a cut that
//     cannot be followed, lost output) returns the error together with the
//     partial *command.Result, as os/exec keeps its buffers; a non-zero
//     exit is a *command.ExitError, silence a *command.InactivityError
//     (command.ErrInactivity);
//   - bad input is refused before any request with an [*InputError]
//     ([ErrInvalidInput]) naming the argument or field (a nil context is a
//     programmer error and is not checked; a nil option is ignored); a base
//     URL that would carry credentials in clear text is an
//     [*InsecureURLError] ([ErrInsecureURL]);
//   - an answer longer than WithMaxResponseSize is a
//     [*ResponseTooLargeError] ([ErrResponseTooLarge]) naming the call and
//     the limit, a body that is not valid JSON a [*DecodeError]
//     ([ErrDecode]), a listing whose server repeats a cursor a
//     [*RepeatedCursorError] ([ErrRepeatedCursor]; no further request), a
//     listing a sandbox forges a [*ListingError],
//     and a 411 or 400 answer to a chunked upload a [*ChunkedUploadError],
//     which names [WithSizedUploads];
//   - a missing file matches fs.ErrNotExist.
//
// Tokens never appear in errors, logs or String output, even when a
// server echoes them.
//
// # Concurrency
//
// A Client, a Sandbox, a User and a command.Handle are safe for concurrent
// use. Share one Client: it keeps the connections. Calls on one Sandbox
// from many goroutines share its cached session, and concurrent resumes
// of it are one request.
//
// # Auto-resume
//
// A Sandbox caches its current session. When a call on it is refused
// because the session stopped (410) or is stopping (422 sandbox_stopping or
// sandbox_snapshotting), the handle resumes the sandbox (GET
// ...?resume=true, deduplicated across goroutines) and replays the call
// once, as the official SDK does. A replay happens only after the API
// refused the call outright; a stream that broke is never replayed.
// [WithAutoResume](false) turns it off; [WithOnResume] reports it.
//
// # Testing
//
// Package sandbox/sandboxtest starts the Vercel Sandbox API on loopback for
// one test, with scripted commands, faults, record and replay, and a leak
// check; its Server.Client is a ready *Client:
//
//	srv := sandboxtest.NewServer(t)
//	srv.Script().Handle(sandboxtest.MatchName("node"), sandboxtest.Reply{Stdout: "hi\n"})
//	client := srv.Client()
//
// Package sandbox/local serves the same API from any program, and runs
// commands as real processes, isolated or not; local.Listen starts it on
// a loopback port and returns a *Client aimed at it.
package sandbox
