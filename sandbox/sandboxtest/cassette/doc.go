// Package cassette records HTTP traffic of the Vercel Sandbox API to a file
// and replays it, so that a test recorded once against Vercel (or against
// sandboxtest) runs later with no server and no credentials.
//
// # Use
//
//	func TestDeploy(t *testing.T) {
//		c := cassette.New(t, "testdata/deploy.cassette") // mode from SANDBOXTEST_CASSETTE
//		client, _ := sandbox.NewClient(
//			sandbox.WithTransport(c.Transport(nil)), // nil: http.DefaultTransport when recording
//			// ... credentials and base URL as usual
//		)
//		// ... the test ...
//	}
//
// Open(path, mode, opts...) gives the same without a test; Close writes a
// recording. Modes are Record, Replay and RecordIfMissing. New takes the
// mode from the SANDBOXTEST_CASSETTE environment variable (EnvVar):
// "record", "replay" or "auto" (RecordIfMissing, also the default).
//
// A replay is an http.RoundTripper (Transport) and an http.Handler
// (Handler; NewServer serves it on a loopback port with a URL), so clients
// in any language, the official TypeScript SDK included, can replay a
// cassette. Frames of a stream are written and flushed one by one; by
// default at once, with WithTiming at the recorded pace.
//
// # What is recorded
//
// For each request: method, path (without the /api prefix), query and
// body; JSON bodies as JSON, archive uploads (application/gzip) as their
// entry list (name, mode, size, sha256), other bodies as size and sha256
// (the bytes too with WithStoreBodies). Bodies are summarised while the
// transport sends them, in bounded memory. For each response: status, the
// headers Content-Type, Content-Disposition, Retry-After, Location and
// X-Vercel-Id (plus WithHeaders), and the body. An NDJSON stream
// (application/x-ndjson) is recorded frame by frame with each frame's
// offset from the response; the caller reads every frame as it arrives
// while it is recorded, and the interaction is complete when the body ends
// or is closed. Transport errors and cut streams are recorded and
// replayed as errors.
//
// # Redaction and normalisation
//
// Nothing secret is written: request headers other than Content-Type and
// X-Cwd are dropped (Authorization with them), the bearer token is
// redacted wherever it shows up, so is anything shaped like a JWT
// (eyJ…), any string under a key whose name has a word that names a
// secret (TOKEN, SECRET, PASSWORD, PASS, PAT, API_KEY, AUTH, COOKIE,
// CREDENTIALS, DSN, CONNECTION_STRING, …; environment variables too, but
// not PWD, PATH or KEYBOARD), the
// password of a URL and every value given to WithRedact; all read
// {{secret}} or {{jwt}} and replay as REDACTED. A secret learned from a
// key is redacted wherever it shows up later (a command that prints it,
// for instance), as it is, JSON-escaped or URL-encoded. The output frames
// of a stream are redacted as one text per stream (stdout, stderr), so a
// secret that a command prints in two writes, half in each frame, is
// hidden too; the end of a frame that may begin a secret is recorded with
// the stream's next frame. Team and project ids (teamId, slug, projectId, project query
// parameters and JSON fields) become {{team}} and {{project}}; a replay
// answers with the values the client sent.
//
// Volatile values become numbered placeholders, the same value always the
// same placeholder, in paths, queries, bodies and frames: session ids
// {{session:1}}, command ids {{command:1}}, snapshot ids {{snapshot:1}},
// names the server generated {{name:1}}, kinds added with WithVolatile,
// request ids {{request}}. Timestamps (numeric fields whose name ends in
// "At") become {{time:+N}}, N milliseconds after the first timestamp met;
// durations (durationMs, duration, …) and frame offsets are rounded down to
// the resolution (WithResolution, default 100 ms). A literal "{{" in the
// data is written {{lb}}. A replay makes up concrete values for the
// placeholders (sbx_replay0…01, replay-name-1, timestamps relative to the
// time of Open) and maps them back to the placeholders when the client
// sends them, so a session id the replay returned is accepted in later
// requests. Re-recording a scenario gives a byte-identical file when its
// requests come in the same order and its times fall in the same steps of
// the resolution (against sandboxtest, a fixed local.WithClock makes sure of the
// timestamps; the ids need nothing).
//
// # Matching
//
// A replayed request is normalised like a recorded one and matched on
// method, path, query and body (headers are ignored). It gets the earliest
// recorded interaction that matches and has not been answered yet, so
// identical requests (polling) get their answers in recorded order and
// concurrent requests may arrive in any order. A request that matches
// nothing fails loudly: the transport returns a *MismatchError
// (errors.Is(err, ErrNoMatch)) and the handler answers 500 with the same
// text, a diff against the closest recorded request; Misses lists them.
//
// # File format
//
// A cassette is UTF-8 text, one JSON object per line, keys in a stable
// order. The first line is the header:
//
//	{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}
//
// then one line per interaction, in the order the requests were sent:
//
//	{"seq":1,"request":{"method":"POST","path":"/v2/sandboxes","query":{"teamId":["{{team}}"]},
//	 "header":{"content-type":"application/json"},"body":{"json":{...}}},
//	 "response":{"status":200,"header":{...},"body":{"json":{...}}}}
//
// (shown wrapped). Request and response bodies hold one of "json", "text",
// "base64" (bytes), "tar" (an entry list, with "gzip"), or "size" and
// "sha256"; "truncated" marks a body that was cut or too large to keep
// (32 MiB), which cannot be replayed. An interaction whose response is a
// stream has "stream":{"frames":N,"end":"eof"|"closed"|"error"} and is
// followed by its N frames, one per line:
//
//	{"seq":3,"frame":1,"at":0,"json":{"command":{...}}}
//
// where "at" is milliseconds since the response, "json" the frame (or
// "text" when it is not JSON) and "noEOL" marks a last line without a
// newline. "end" is "closed" when the client stopped reading early; a
// replay then keeps the stream open until the client closes it. An
// interaction with "error" and no response is a transport error.
//
// # Limitations
//
//   - Matching is exact after normalisation: a request whose body differs
//     in any field (a random name the test made up, a changed argument)
//     does not match; use WithVolatile for such values. Clients differ in
//     the requests they send (the official TypeScript SDK always sends
//     env and ports, for instance), so a cassette replays for the kind of
//     client that recorded it; other clients match only where their
//     requests are the same.
//   - Team and project values shorter than 6 characters are replaced only
//     where they stand alone (query parameters, teamId and projectId
//     fields, whole strings), not inside longer text.
//   - A stream the client closes before its end is told apart from one
//     that was over by waiting up to 500 ms for the end of the body; a
//     recorded transport error keeps the message of the original, host
//     and port included.
//   - Placeholder numbers follow the order values are met, so concurrent
//     requests that introduce new ids may number them differently from
//     run to run (the replay still works; the file may differ).
//   - Timing is as seen by the recording client (when it read each frame),
//     rounded down to the resolution; JSON answers are replayed with sorted
//     keys and compact spacing, not byte for byte.
//   - Secrets are found by value (the bearer token, WithRedact), shape
//     (JWT, the password of a URL such as https://user:pw@host) and key
//     name. A secret that is none of these, such as an environment
//     variable with an innocent name, is written as is; so is a value
//     learned from a key while a stream is recorded, when a frame boundary
//     cuts it. Binary response bodies (file downloads) are stored with
//     only known secrets and JWTs replaced.
//   - Bodies being recorded cannot be rewound, so the transport's own
//     retry of a request on a dead keep-alive connection is disabled for
//     streamed uploads while recording.
//   - Only the headers listed above are recorded and replayed; cookies,
//     redirects and HTTP trailers are not handled.
//
// The command cassette-replay (in cmd/cassette-replay) serves a cassette
// on a port for clients in other languages.
package cassette
