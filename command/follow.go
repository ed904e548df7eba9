package command

import (
	"context"
	"errors"
	"hash/maphash"
	"io"
	"log/slog"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/cmdstream"
	"github.com/sbx-go/vercel-sandbox/internal/conn"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
	"github.com/sbx-go/vercel-sandbox/internal/observe"
)

// Hosted Vercel's edge cuts any stream after about six minutes, and a
// command may run for hours. So a stream that ends without proving that
// its command finished is followed again, never by running the command
// again: the logs endpoint replays the output from the start, and the
// bytes already delivered (counted per stream) are skipped, so each byte
// reaches the caller exactly once. A wait is simply repeated. Following
// ends only on the command's exit, on the session's end (410, or an error
// frame such as sandbox_stream_closed: errors matching ErrGone), on an
// answer that no repetition mends, or on ctx. Re-attachments that bring
// nothing new back off, so a server that keeps cutting is not hammered.
//
// The logs endpoint has no final frame, and the edge's cut can end a
// stream as cleanly as the command's end does, a replay of a finished
// command's output included. So a clean end proves nothing by itself: once
// the command has finished, the logs are read again, and again while a
// reading brings new bytes, until one ends cleanly having brought nothing
// new. The command has ended, so this is bounded by its output; the price
// is one more reading of a finished command's output.
//
// A replay is checked against what it skips: per stream, a hash of the
// bytes delivered (seeded at random, so a server cannot forge a match) is
// compared with the hash of the replayed prefix, and a replay that differs,
// or that keeps ending short of what was delivered, is an OutputLostError
// naming the stream and the offset, never a silent splice.

// errStop ends a follow whose consumer wants nothing more.
var errStop = errors.New("consumer stopped")

// delivered is what a caller has received of a command's output, per
// stream (0 stdout, 1 stderr): the byte count, and a hash of the bytes for
// checking a replay against them.
type delivered struct {
	n    [2]int64
	sum  [2]maphash.Hash
	seed maphash.Seed
}

func newDelivered() *delivered {
	d := &delivered{seed: maphash.MakeSeed()}
	d.sum[0].SetSeed(d.seed)
	d.sum[1].SetSeed(d.seed)
	return d
}

// add records data as delivered on stream i.
func (d *delivered) add(i int, data []byte) {
	d.n[i] += int64(len(data))
	_, _ = d.sum[i].Write(data)
}

func (d *delivered) total() int64 { return d.n[0] + d.n[1] }

// streamIndex is the index of a log frame's stream in delivered.
func streamIndex(k cmdstream.Kind) int {
	if k == cmdstream.KindStderr {
		return 1
	}
	return 0
}

// streamNames names the streams of delivered.
var streamNames = [2]string{"stdout", "stderr"}

// follower follows one command's output through the logs endpoint.
type follower struct {
	c   *conn.Conn
	ref Ref
	op  string
	// emit receives each new chunk; an error ends the follow with it.
	emit func(k cmdstream.Kind, data []byte) error
	// track, if set, is given each log body as it opens, so that an
	// inactivity timer can close it.
	track func(io.Closer)
	// known is the command's state when it is already known to be done;
	// then a clean end of the logs needs no request but the confirming
	// reading.
	known *Info
	sent  *delivered
}

// reading is what one log stream brought.
type reading struct {
	fresh   bool  // new bytes were delivered
	short   int   // index of a stream the replay ended short of, or -1
	shortAt int64 // where that replay ended
}

// run follows the logs until the command has finished and returns its
// final state. attempt is the number of re-attachments made before (1
// when an attached run's stream was cut), cause how the last stream ended.
func (f *follower) run(ctx context.Context, attempt int, cause error) (Info, error) {
	idle := 0        // consecutive re-attachments that brought nothing new
	unserved := 0    // readings of a finished command's logs that answered 404 or ended short
	confirm := false // the next reading only confirms that the output is complete
	for {
		if attempt > 0 && !confirm {
			if err := f.announce(ctx, attempt, idle, cause); err != nil {
				return Info{}, err
			}
		}
		confirming := confirm
		confirm = false
		before := f.sent.total()
		finished := f.known != nil && f.known.Done()
		got, err := f.stream(ctx)
		switch {
		case err == nil && finished && got.short >= 0:
			// A replay of the finished output that ends short of what was
			// delivered: cut again, or not the output delivered.
			if unserved++; unserved > logsRaceRetries || f.c.Reattach.Disabled {
				return Info{}, f.mismatch(got.short, got.shortAt)
			}
			cause = cmdstream.EndedEarly(f.ref.SessionID, f.ref.CommandID,
				"before the output already delivered (log replay of "+streamNames[got.short]+")")
		case err == nil && finished:
			if confirming && !got.fresh {
				return *f.known, nil
			}
			confirm = true // a clean end may be a cut: read once more
		case err == nil:
			info, ierr := f.ended(ctx)
			if ierr != nil {
				return Info{}, ierr
			}
			if info.Done() {
				f.known = &info
				confirm = true
				break
			}
			if f.c.Reattach.Disabled {
				return Info{}, cmdstream.EndedEarly(f.ref.SessionID, f.ref.CommandID, "while the command was still running")
			}
			cause = nil // ended cleanly while the command runs
		case errors.Is(err, errStop):
			return Info{}, err
		case ctx.Err() != nil:
			return Info{}, context.Cause(ctx)
		case errors.Is(err, apierr.ErrNotFound):
			if unserved++; unserved > logsRaceRetries {
				return Info{}, f.lost(ctx, err)
			}
			if _, ok := f.finished(ctx); !ok || f.c.Reattach.Disabled {
				return Info{}, err
			}
			cause = err
		case !isCut(err) || f.c.Reattach.Disabled:
			return Info{}, err
		default:
			cause = err
			// The logs of a finished command that keep failing before
			// they bring anything new are not awaited for ever.
			if finished && !got.fresh {
				if unserved++; unserved > logsRaceRetries {
					return Info{}, f.lostAt("", 0, err)
				}
			}
		}
		if confirm {
			continue // a confirming reading is no re-attachment
		}
		if f.sent.total() == before {
			idle++
		} else {
			idle = 0
		}
		attempt++
	}
}

// endGrace is how long a follower waits, after a log stream ended cleanly,
// for the command to be reported finished before it calls the stream cut:
// a server may close the stream a moment before it records the exit. (The
// logs are read again either way; see above.)
const endGrace = 2 * time.Second

// ended returns the command's state after a log stream ended cleanly.
func (f *follower) ended(ctx context.Context) (Info, error) {
	info, err := fetchInfo(ctx, f.c.Core, f.ref, false)
	if err != nil || info.Done() {
		return info, err
	}
	gctx, cancel := context.WithTimeout(ctx, endGrace)
	defer cancel()
	info, err = fetchInfo(gctx, f.c.Core, f.ref, true)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return Info{}, nil // still running after the grace
	}
	return info, err
}

// logsRaceRetries bounds how often a follower asks again for the logs of
// a finished command that answered 404, whose replay ended short of what
// was delivered, or that failed before it brought anything new. Hosted Vercel's logs can race the command's cleanup
// for a moment after it ends (getsentry/junior#992); the backoff between
// attempts (0.2, 0.4, 0.8, 1.6 s) makes the grace about three seconds.
const logsRaceRetries = 4

// finished returns the command's state when it is known, or reported, to
// have finished: a 404 on its logs is then the race with its cleanup, not
// a command that does not exist.
func (f *follower) finished(ctx context.Context) (Info, bool) {
	if f.known != nil && f.known.Done() {
		return *f.known, true
	}
	info, err := fetchInfo(ctx, f.c.Core, f.ref, false)
	if err != nil || !info.Done() {
		return Info{}, false
	}
	f.known = &info
	return info, true
}

// lost is the error of a finished command whose logs never came back: the
// bytes not yet delivered cannot be had, and the caller is told so.
func (f *follower) lost(ctx context.Context, err error) error {
	f.finished(ctx)
	return f.lostAt("", 0, err)
}

// mismatch is the error of a replay of stream i that stopped matching the
// output delivered at offset.
func (f *follower) mismatch(i int, offset int64) error {
	return f.lostAt(streamNames[i], offset, nil)
}

// lostAt is an OutputLostError with the exit code, when known, and the
// bytes delivered.
func (f *follower) lostAt(stream string, offset int64, err error) error {
	code := -1
	if f.known != nil && f.known.ExitCode != nil {
		code = *f.known.ExitCode
	}
	return &apierr.OutputLostError{SessionID: f.ref.SessionID, CommandID: f.ref.CommandID,
		ExitCode: code, Delivered: f.sent.total(), Stream: stream, Offset: offset, Err: err}
}

// stream reads one log stream to its end, passing on the bytes not yet
// delivered. A clean end gives a nil error. The bytes it skips are checked
// against those delivered.
func (f *follower) stream(ctx context.Context) (reading, error) {
	got := reading{short: -1}
	body, dec, err := openLogs(ctx, f.c.Core, f.ref)
	if err != nil {
		return got, err
	}
	defer body.Close()
	defer dec.Close()
	if f.track != nil {
		f.track(body)
	}
	skip := f.sent.n // what was delivered before: the replay's prefix to check
	var seen [2]int64
	var sum [2]maphash.Hash
	sum[0].SetSeed(f.sent.seed)
	sum[1].SetSeed(f.sent.seed)
	for {
		kind, data, _, err := dec.NextParts()
		if err == io.EOF {
			for i := range seen {
				if seen[i] < skip[i] {
					got.short, got.shortAt = i, seen[i]
					break
				}
			}
			return got, nil
		}
		if err != nil {
			return got, err
		}
		if kind != cmdstream.KindStdout && kind != cmdstream.KindStderr {
			return got, &apierr.StreamError{Code: "malformed_frame", Message: "command line in a log stream",
				SessionID: f.ref.SessionID, CommandID: f.ref.CommandID}
		}
		i := streamIndex(kind)
		if left := skip[i] - seen[i]; left > 0 {
			n := min(left, int64(len(data)))
			_, _ = sum[i].Write(data[:n])
			data = data[n:]
			if seen[i] += n; seen[i] == skip[i] && sum[i].Sum64() != f.sent.sum[i].Sum64() {
				return got, f.mismatch(i, skip[i])
			}
		}
		if len(data) == 0 {
			continue
		}
		seen[i] += int64(len(data))
		f.sent.add(i, data)
		got.fresh = true
		if err := f.emit(kind, data); err != nil {
			return got, err
		}
	}
}

// announce logs a re-attachment, reports it to the hook and, after
// re-attachments that brought nothing new, waits a backoff.
func (f *follower) announce(ctx context.Context, attempt, idle int, cause error) error {
	ev := conn.ReattachEvent{SandboxName: f.ref.SandboxName, SessionID: f.ref.SessionID, CommandID: f.ref.CommandID,
		Op: f.op, Attempt: attempt, Delivered: f.sent.total(), Err: cause}
	return reattach(ctx, f.c, ev, idle)
}

// reattach makes a re-attachment visible (log and hook) and waits before
// it when idle re-attachments in a row brought nothing new.
func reattach(ctx context.Context, c *conn.Conn, ev conn.ReattachEvent, idle int) error {
	c.Core.Logger().LogAttrs(ctx, slog.LevelInfo, "vercel sandbox: re-attaching to command",
		slog.String("op", ev.Op), slog.String("session", ev.SessionID), slog.String("command", ev.CommandID),
		slog.Int("attempt", ev.Attempt), slog.Int64("delivered", ev.Delivered), slog.Any("cause", ev.Err))
	observe.Event(ctx, observe.EventReattach, slog.String(observe.KeyOp, ev.Op),
		slog.Int(observe.KeyAttempt, ev.Attempt), slog.Int64(observe.KeyDelivered, ev.Delivered))
	if c.Reattach.OnReattach != nil {
		c.Reattach.OnReattach(ev)
	}
	if idle == 0 {
		return nil
	}
	return httpcore.Sleep(ctx, httpcore.Backoff(200*time.Millisecond, 10*time.Second, idle-1))
}

// isCut reports whether a stream ended in a way that following it again
// may mend: a read error or a transient failure to open it, not an error
// frame, a malformed line, a refusal, a replay that disagrees with what
// was delivered or the caller's writer.
func isCut(err error) bool {
	if errors.Is(err, apierr.ErrOutputLost) {
		return false
	}
	var se *apierr.StreamError
	if errors.As(err, &se) {
		return se.Code == "stream_ended_early"
	}
	if errors.Is(err, errStop) {
		return false
	}
	var we *writeError
	if errors.As(err, &we) {
		return false
	}
	return httpcore.Transient(err)
}

// writeError is a failure of the caller's writer, which ends a run.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// wait blocks until the command has finished, repeating the wait while it
// is cut. Hosted Vercel sends the headers of a wait only when the command
// ends, so a response-header timeout of the caller's transport is one more
// cut here, not a failure.
func wait(ctx context.Context, c *conn.Conn, ref Ref) (Info, error) {
	idle := 0
	for attempt := 0; ; attempt++ {
		began := time.Now()
		info, err := fetchInfo(ctx, c.Core, ref, true)
		if err == nil && info.Done() {
			return info, nil
		}
		if ctx.Err() != nil {
			return Info{}, context.Cause(ctx)
		}
		if err != nil && !httpcore.Transient(err) {
			return Info{}, err
		}
		if c.Reattach.Disabled {
			if err != nil {
				return Info{}, err
			}
			return Info{}, cmdstream.EndedEarly(ref.SessionID, ref.CommandID, "before the command finished (wait answered without an exit code)")
		}
		// A wait that was cut at once backs off; one that lasted is fine.
		if time.Since(began) < time.Second {
			idle++
		} else {
			idle = 0
		}
		ev := conn.ReattachEvent{SandboxName: ref.SandboxName, SessionID: ref.SessionID, CommandID: ref.CommandID,
			Op: "wait", Attempt: attempt + 1, Err: err}
		if err := reattach(ctx, c, ev, idle); err != nil {
			return Info{}, err
		}
	}
}
