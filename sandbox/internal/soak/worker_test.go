package soak_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
)

// opKind is an operation of the soak.
type opKind int

const (
	opAttached opKind = iota // run a command attached, output into writers
	opDetached               // start a command, then wait and read its logs one of three ways
	opFiles                  // upload files, check them on the server's disk, download them
)

func (k opKind) String() string { return [...]string{"attached", "detached", "files"}[k] }

// worker drives one sandbox at a time, round after round.
type worker struct {
	id       int
	rng      *rand.Rand
	c        *sandbox.Client
	reattach bool
	replayer *sandbox.Client // re-attaches, whatever c does
	srv      *server
	tl       *tally
	o        *options
	deadline time.Time
	seq      int // commands and uploads so far, for unique names
}

// round is one sandbox's life.
type round struct {
	n  int
	sb *sandbox.Sandbox
	// expect says, per command marker, whether the command must have run
	// exactly once (its output or exit code was reported) or at most once.
	expect map[string]bool
}

// opContext names an operation in violations.
type opContext struct {
	w    *worker
	desc string
}

func (oc opContext) fail(kind, format string, args ...any) {
	oc.w.tl.violate(kind, "%s: %s", oc.desc, fmt.Sprintf(format, args...))
}

func (w *worker) run(ctx context.Context, b *barrier) {
	for r := 0; r == 0 || time.Now().Before(w.deadline); r++ {
		if ctx.Err() != nil {
			return
		}
		b.wait(w.id)
		if !w.round(ctx, r) {
			return
		}
	}
}

// round runs one sandbox's life. It reports false when the sandbox could
// not be created, which ends the worker.
func (w *worker) round(ctx context.Context, n int) bool {
	name := fmt.Sprintf("soak-w%02d-r%03d", w.id, n)
	oc := opContext{w: w, desc: fmt.Sprintf("worker %d round %d (%s)", w.id, n, name)}
	var sb *sandbox.Sandbox
	if !w.setup(ctx, oc, "create", func() (err error) {
		sb, err = w.c.Create(ctx, sandbox.CreateParams{Name: name})
		return err
	}) {
		return false
	}
	w.tl.add("rounds", 1)
	rd := &round{n: n, sb: sb, expect: map[string]bool{}}
	ops := 6 + w.rng.IntN(9)
	for i := range ops {
		if i >= minOps && time.Now().After(w.deadline) {
			break
		}
		w.op(ctx, rd, i)
	}
	w.verify(ctx, rd, oc)
	w.setup(ctx, oc, "delete", func() error { return w.c.Delete(ctx, name, sandbox.DeleteParams{}) })
	return true
}

// setup makes a call of the round's own (create, delete), outside any
// fault of this worker. The token it sends may still have been expired by
// another worker's fault, and a fresh one refused as hosted Vercel briefly
// refuses fresh tokens: those refusals (the call was not executed) are
// counted and the call is made again, a few times. Anything else is a
// violation. It reports whether the call succeeded.
func (w *worker) setup(ctx context.Context, oc opContext, what string, call func() error) bool {
	var err error
	for range 5 {
		if err = call(); err == nil {
			return true
		}
		k := classify(err)
		if k != "api-401" && k != "api-403" {
			break
		}
		w.tl.add("errors.setup-"+k, 1)
		time.Sleep(200 * time.Millisecond)
	}
	oc.fail("setup", "%s, with no fault of this worker injected: %v", what, err)
	return false
}

// op runs one operation under the faults drawn for it.
func (w *worker) op(ctx context.Context, rd *round, i int) {
	kind := w.o.ops[w.rng.IntN(len(w.o.ops))]
	w.seq++
	id := fmt.Sprintf("w%02d-%05d", w.id, w.seq)
	var faults []fault.Fault
	if w.o.faults {
		faults = w.drawFaults(kind, rd.sb.SessionID(), rd.sb.Name())
	}
	texts := make([]string, len(faults))
	for j, f := range faults {
		texts[j] = f.String()
	}
	oc := opContext{w: w, desc: fmt.Sprintf("worker %d (re-attach %v) round %d op %d %s %s, faults [%s]",
		w.id, w.reattach, rd.n, i, kind, id, strings.Join(texts, " | "))}
	var ids []int64
	if len(faults) > 0 {
		var err error
		if ids, err = w.srv.inject(ctx, faults); err != nil {
			oc.fail("setup", "injecting the faults: %v", err)
			return
		}
	}
	w.tl.add("ops."+kind.String(), 1)
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	var after func(context.Context)
	switch kind {
	case opAttached:
		after = w.attached(octx, rd, id, oc)
	case opDetached:
		after = w.detached(octx, rd, id, oc)
	case opFiles:
		w.files(octx, rd, id, oc)
	}
	cancel()
	if len(ids) > 0 {
		hits, err := w.srv.remove(ctx, ids)
		if err != nil {
			oc.fail("setup", "removing the faults: %v", err)
		}
		for j := range min(len(hits), len(faults)) {
			w.tl.add("faults.injected."+kindOf(faults[j]), 1)
			if hits[j] > 0 {
				w.tl.add("faults.fired."+kindOf(faults[j]), 1)
			}
		}
	}
	if after != nil {
		after(ctx)
	}
}

// attached runs a command attached. It returns a check to make once the
// faults are gone: the replay of a command whose run failed.
func (w *worker) attached(ctx context.Context, rd *round, id string, oc opContext) func(context.Context) {
	spec := randomCommand(w.rng, id)
	oc.desc += ", " + spec.String()
	var stdout, stderr bytes.Buffer
	cmd := spec.cmd(rd.sb)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res, err := cmd.Run(ctx)
	var ee *command.ExitError
	if errors.As(err, &ee) {
		res, err = ee.Result, nil
	}
	if err == nil {
		w.completed(oc, rd, spec, res.ExitCode(), stdout.Bytes(), stderr.Bytes())
		w.sameCapture(oc, stdout.Bytes(), res.Stdout, stderr.Bytes(), res.Stderr)
		return nil
	}
	w.failed(oc, rd, spec, err, stdout.Bytes(), stderr.Bytes())
	if ref, ok := refOf(err, rd.sb.Name()); ok {
		return func(ctx context.Context) { w.replay(ctx, oc, ref, spec) }
	}
	return nil
}

// sameCapture checks that the Result holds what the writers received.
func (w *worker) sameCapture(oc opContext, stdout, capOut, stderr, capErr []byte) {
	if !bytes.Equal(stdout, capOut) || !bytes.Equal(stderr, capErr) {
		oc.fail("wrong", "the result captured %d+%d bytes, the writers got %d+%d", len(capOut), len(capErr), len(stdout), len(stderr))
	}
}

// detached starts a command, then follows it one of three ways: wait and
// replay its output; follow its logs as they come, then wait; or reattach
// by its stored Ref and copy its output, then wait.
func (w *worker) detached(ctx context.Context, rd *round, id string, oc opContext) func(context.Context) {
	spec := randomCommand(w.rng, id)
	oc.desc += ", " + spec.String()
	h, err := spec.cmd(rd.sb).Start(ctx)
	if err != nil {
		w.failed(oc, rd, spec, err, nil, nil)
		return nil
	}
	var stdout, stderr bytes.Buffer
	var outErr, waitErr error
	var res *command.Result
	switch v := w.rng.IntN(3); v {
	case 0:
		oc.desc += ", wait then output"
		res, waitErr = h.Wait(ctx)
		outErr = h.CopyOutput(ctx, &stdout, &stderr)
	case 1:
		oc.desc += ", logs then wait"
		for ev, err := range h.Logs(ctx) {
			if err != nil {
				outErr = err
				break
			}
			if ev.Stream == command.Stderr {
				stderr.Write(ev.Data)
			} else {
				stdout.Write(ev.Data)
			}
		}
		res, waitErr = h.Wait(ctx)
	default:
		oc.desc += ", reattach by Ref then copy output and wait"
		ref, err := command.ParseRef(h.Ref().String())
		if err != nil {
			oc.fail("setup", "parsing the Ref %q: %v", h.Ref(), err)
			return nil
		}
		h2, err := w.c.Attach(ref)
		if err != nil {
			oc.fail("setup", "attaching: %v", err)
			return nil
		}
		outErr = h2.CopyOutput(ctx, &stdout, &stderr)
		res, waitErr = h2.Wait(ctx)
	}
	var ee *command.ExitError
	if errors.As(waitErr, &ee) {
		res, waitErr = ee.Result, nil
	}
	if waitErr == nil && res.ExitCode() != spec.exit {
		oc.fail("wrong", "wait reported exit code %d, want %d", res.ExitCode(), spec.exit)
	} else if waitErr != nil {
		w.countError(oc, waitErr)
	}
	if outErr == nil {
		w.completed(oc, rd, spec, spec.exit, stdout.Bytes(), stderr.Bytes())
		return nil
	}
	w.failed(oc, rd, spec, outErr, stdout.Bytes(), stderr.Bytes())
	if waitErr == nil {
		rd.expect[spec.id] = true // it exited: it ran
	}
	ref := h.Ref()
	return func(ctx context.Context) { w.replay(ctx, oc, ref, spec) }
}

// completed checks a command whose call reported success: everything
// delivered, once, and the exit code it printed.
func (w *worker) completed(oc opContext, rd *round, spec commandSpec, exit int, stdout, stderr []byte) {
	w.tl.add("commands", 1)
	rd.expect[spec.id] = true
	if exit != spec.exit {
		oc.fail("wrong", "exit code %d, want %d", exit, spec.exit)
	}
	wantOut, wantErr := spec.output()
	for _, s := range []struct {
		name      string
		want, got []byte
	}{{"stdout", wantOut, stdout}, {"stderr", wantErr, stderr}} {
		w.tl.add("bytes.delivered", int64(len(s.got)))
		d := compare(s.want, s.got)
		w.countDelivery(d)
		if !d.clean() {
			oc.fail(d.kind(), "the call succeeded, but its %s is not what the command printed: %s (got %d bytes of %d)",
				s.name, d, len(s.got), len(s.want))
		}
	}
}

// failed checks a command whose call failed: the error is counted by
// kind, and what was delivered must be a prefix of what was printed.
func (w *worker) failed(oc opContext, rd *round, spec commandSpec, err error, stdout, stderr []byte) {
	w.tl.add("commands", 1)
	if _, ok := rd.expect[spec.id]; !ok {
		rd.expect[spec.id] = false
	}
	w.countError(oc, err)
	wantOut, wantErr := spec.output()
	for _, s := range []struct {
		name      string
		want, got []byte
	}{{"stdout", wantOut, stdout}, {"stderr", wantErr, stderr}} {
		w.tl.add("bytes.delivered", int64(len(s.got)))
		lost, bad := prefixCheck(s.want, s.got)
		w.tl.add("bytes.reported_lost", lost)
		w.countDelivery(bad)
		if !bad.clean() {
			oc.fail(bad.kind(), "the call failed (%v), and its %s before the error is not a prefix of what the command printed: %s",
				err, s.name, bad)
		}
	}
}

func (w *worker) countDelivery(d delivery) {
	w.tl.add("bytes.lost", d.lost)
	w.tl.add("bytes.duplicated", d.dup)
	w.tl.add("bytes.wrong", d.wrong)
}

// kind names the worst of a delivery's faults, as a violation.
func (d delivery) kind() string {
	switch {
	case d.wrong > 0:
		return "wrong"
	case d.dup > 0:
		return "duplicated"
	}
	return "lost"
}

// replay reads again, with no fault injected, the output of a command
// whose call failed: if the replay succeeds it must be whole.
func (w *worker) replay(ctx context.Context, oc opContext, ref command.Ref, spec commandSpec) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	h, err := w.replayer.Attach(ref)
	if err != nil {
		oc.fail("setup", "attaching for the replay: %v", err)
		return
	}
	var outBuf, errBuf bytes.Buffer
	err = h.CopyOutput(ctx, &outBuf, &errBuf)
	stdout, stderr := outBuf.Bytes(), errBuf.Bytes()
	wantOut, wantErr := spec.output()
	if err != nil {
		w.tl.add("replay.error."+classify(err), 1)
		for _, s := range [][2][]byte{{wantOut, stdout}, {wantErr, stderr}} {
			if _, bad := prefixCheck(s[0], s[1]); !bad.clean() {
				oc.fail(bad.kind(), "the replay failed (%v), and what it delivered before is not a prefix: %s", err, bad)
			}
		}
		return
	}
	if d := compare(wantOut, stdout); !d.clean() {
		oc.fail("replay", "the replay succeeded, but its stdout is not what the command printed: %s", d)
		return
	}
	if d := compare(wantErr, stderr); !d.clean() {
		oc.fail("replay", "the replay succeeded, but its stderr is not what the command printed: %s", d)
		return
	}
	w.tl.add("replay.ok", 1)
}

// refOf returns the command an error names, if any.
func refOf(err error, sandboxName string) (command.Ref, bool) {
	var se *sandbox.StreamError
	var ol *sandbox.OutputLostError
	switch {
	case errors.As(err, &ol) && ol.CommandID != "":
		return command.Ref{SandboxName: sandboxName, SessionID: ol.SessionID, CommandID: ol.CommandID}, true
	case errors.As(err, &se) && se.CommandID != "" && se.SessionID != "":
		return command.Ref{SandboxName: sandboxName, SessionID: se.SessionID, CommandID: se.CommandID}, true
	}
	return command.Ref{}, false
}

// countError counts an error by kind; an error no kind allows is a
// violation.
func (w *worker) countError(oc opContext, err error) {
	k := classify(err)
	w.tl.add("errors."+k, 1)
	w.tl.example(k, fmt.Sprintf("%v (%s)", err, oc.desc))
	switch k {
	case "unexpected", "hung":
		oc.fail(k, "%v", err)
	}
}

// classify names the kind of an error. Every kind but "unexpected" and
// "hung" is an honest report that the call did not do all it was asked.
func classify(err error) string {
	var ou *sandbox.OutcomeUnknownError
	var ol *sandbox.OutputLostError
	var se *sandbox.StreamError
	var ae *sandbox.APIError
	var de *sandbox.DecodeError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "hung"
	case errors.As(err, &ou):
		return "outcome-unknown"
	case errors.As(err, &ol):
		return "output-lost"
	case errors.Is(err, sandbox.ErrGone):
		return "gone"
	case errors.As(err, &se):
		return strings.ReplaceAll(se.Code, "_", "-")
	case errors.Is(err, sandbox.ErrRateLimited):
		return "rate-limited"
	case errors.As(err, &ae):
		return fmt.Sprintf("api-%d", ae.StatusCode)
	case errors.As(err, &de):
		return "decode"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.As(err, &ne):
		return "transport"
	}
	return "unexpected"
}

// upload is a file of a files operation.
type upload struct {
	path string
	data []byte
	sum  string
}

// files uploads one to three files of random content (empty to 400 KiB),
// checks them on the server's disk, then downloads each.
func (w *worker) files(ctx context.Context, rd *round, id string, oc opContext) {
	ups := make([]upload, 1+w.rng.IntN(3))
	entries := make([]files.Entry, len(ups))
	var sizes []string
	for i := range ups {
		size := 0
		switch x := w.rng.IntN(10); {
		case x == 0:
		case x < 4:
			size = w.rng.IntN(4 << 10)
		case x < 7:
			size = w.rng.IntN(64 << 10)
		default:
			size = w.rng.IntN(400 << 10)
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(w.rng.Uint32())
		}
		sum := sha256.Sum256(data)
		ups[i] = upload{path: fmt.Sprintf("up/%s-%d.bin", id, i), data: data, sum: hex.EncodeToString(sum[:])}
		entries[i] = files.FromBytes(ups[i].path, data)
		sizes = append(sizes, fmt.Sprint(size))
	}
	oc.desc += ", files of " + strings.Join(sizes, ", ") + " bytes"
	err := rd.sb.FS().WriteFiles(ctx, entries, files.WriteParams{})
	if err != nil {
		w.countError(oc, err)
	}
	for _, u := range ups {
		st, serr := w.srv.file(ctx, rd.sb.Name(), u.path, false)
		switch {
		case serr != nil:
			oc.fail("setup", "reading %s on the server: %v", u.path, serr)
			continue
		case err == nil && (!st.Exists || st.SHA256 != u.sum):
			w.tl.add("checksums.wrong", 1)
			oc.fail("checksum", "the upload succeeded, but the server holds %s with %d bytes (sha256 %.12s), want %d (%.12s)",
				u.path, st.Size, st.SHA256, len(u.data), u.sum)
			continue
		case err != nil && st.Exists && st.SHA256 != u.sum:
			w.tl.add("files.partial_after_error", 1)
			continue
		case err != nil && !st.Exists:
			continue
		}
		w.download(ctx, rd, oc, u)
	}
}

// download reads a file back and checks its checksum.
func (w *worker) download(ctx context.Context, rd *round, oc opContext, u upload) {
	rc, err := rd.sb.FS().Open(ctx, u.path)
	if err != nil {
		w.countError(oc, err)
		return
	}
	h := sha256.New()
	n, err := io.Copy(h, rc)
	rc.Close()
	if err != nil {
		w.countError(oc, err)
		return
	}
	w.tl.add("files.checked", 1)
	w.tl.add("files.bytes", n)
	if sum := hex.EncodeToString(h.Sum(nil)); n != int64(len(u.data)) || sum != u.sum {
		w.tl.add("checksums.wrong", 1)
		oc.fail("checksum", "the download of %s succeeded with %d bytes (sha256 %.12s), want %d (%.12s)", u.path, n, sum, len(u.data), u.sum)
	}
}

// verify counts, once the round's commands have ended, how often each
// ran: by its marker in the sandbox and by the server's command list.
func (w *worker) verify(ctx context.Context, rd *round, oc opContext) {
	name := rd.sb.Name()
	var cmds []serverCommand
	for end := time.Now().Add(time.Minute); ; {
		var err error
		if cmds, err = w.srv.commands(ctx, name); err != nil {
			oc.fail("setup", "listing the server's commands: %v", err)
			return
		}
		running := false
		for _, c := range cmds {
			running = running || c.Running
		}
		if !running {
			break
		}
		if time.Now().After(end) {
			oc.fail("hung", "commands still run a minute after the round")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, err := w.srv.file(ctx, name, markersFile, true)
	if err != nil {
		oc.fail("setup", "reading the markers: %v", err)
		return
	}
	marked := map[string]int{}
	for _, l := range strings.Fields(string(st.Content)) {
		marked[l]++
	}
	started := map[string]int{}
	for _, c := range cmds {
		started[c.Marker]++
	}
	for id, must := range rd.expect {
		m, s := marked[id], started[id]
		switch {
		case m > 1 || s > 1:
			w.tl.add("commands.run_twice", 1)
			oc.fail("run-twice", "command %s ran %d times by its marker, started %d times by the server", id, m, s)
		case must && (m != 1 || s != 1):
			oc.fail("unaccounted", "command %s reported as run, but ran %d times by its marker, started %d by the server", id, m, s)
		case s == 0:
			w.tl.add("commands.never_started", 1)
		}
		delete(marked, id)
		delete(started, id)
	}
	for id := range marked {
		oc.fail("unaccounted", "marker %q of no command of the round", id)
	}
	for id := range started {
		oc.fail("unaccounted", "command %q started by the server, not by the round", id)
	}
}
