package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

const (
	signalKill = 9
	signalTerm = 15
	// exitNotStarted is the exit code of a command the executor could not
	// start, as a shell reports "command not found".
	exitNotStarted = 127
)

// handleRunCommand serves POST /v2/sandboxes/sessions/{sid}/cmd.
func (s *Server) handleRunCommand(w http.ResponseWriter, r *http.Request) *apiError {
	sid := r.PathValue("sid")
	sess, aerr := s.lookupSession(sid, true)
	if aerr != nil {
		return aerr
	}
	var req wire.CommandRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		return aerr
	}
	if req.Timeout != nil && *req.Timeout < 100 {
		return badRequest("timeout must be at least 100 ms.")
	}
	cwd, hostCwd, aerr := s.checkRun(sess, req.Command, req.Env, req.Cwd)
	if aerr != nil {
		return aerr
	}

	c, started, aerr := s.registerCommand(sess, &req, cwd)
	if aerr != nil {
		return aerr
	}
	if notFound := s.startCommand(c, hostCwd); notFound != nil {
		s.unregisterCommand(c)
		return errorf(http.StatusBadRequest, codeExecNotFound, "Executable %q was not found.", notFound.Name)
	}

	if !req.Wait {
		writeJSON(w, http.StatusOK, wire.CommandResponse{Command: started})
		return nil
	}
	s.streamAttached(w, r, c, started, req.Logs)
	return nil
}

// registerCommand records a new command of a running session and returns
// its wire form as started. Called without s.mu.
func (s *Server) registerCommand(sess *sessionRec, req *wire.CommandRequest, cwd string) (*commandRec, wire.Command, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Nothing has run: a 5xx is safe to retry.
		return nil, wire.Command{}, errorf(http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
	}
	if aerr := statusError(sess.status); aerr != nil {
		return nil, wire.Command{}, aerr
	}
	id := s.ids.commandID()
	for sess.commands[id] != nil {
		id = s.ids.commandID()
	}
	args := req.Args
	if args == nil {
		args = []string{}
	}
	c := &commandRec{
		seq:       s.nextSeq(),
		id:        id,
		sess:      sess,
		name:      req.Command,
		args:      args,
		cwd:       cwd,
		env:       s.runEnv(sess, req.Env),
		sudo:      req.Sudo,
		timeoutMs: req.Timeout,
		startedAt: s.nowMs(),
		started:   time.Now(),
		out:       s.out.newLog(s.cfg.outputLimit),
		done:      make(chan struct{}),
	}
	sess.commands[id] = c
	s.commands = append(s.commands, c)
	sess.ops.Add(1)
	s.wg.Add(1)
	s.watchDisk(sess)
	return c, commandWire(c), nil
}

// startCommand hands c to the executor and watches it until it ends. A
// command whose executable does not exist is, on hosted Vercel, no
// command at all: it is returned for the caller to refuse.
func (s *Server) startCommand(c *commandRec, hostCwd string) *NotFoundError {
	sess := c.sess
	cmd := s.execCmd(sess, c.id, c.name, c.args, c.env, c.cwd, hostCwd, c.sudo)
	cmd.Stdout, cmd.Stderr = c.out.writer(streamStdout), c.out.writer(streamStderr)
	proc, err := s.exec.Start(sess.ctx, cmd)
	var nf *NotFoundError
	switch {
	case errors.As(err, &nf) && s.hosted():
		return nf
	case errors.As(err, &nf):
		_ = c.out.append(streamStderr, []byte(nf.Msg))
		s.finishCommand(c, exitNotStarted)
		return nil
	case err != nil:
		_ = c.out.append(streamStderr, []byte("local: cannot start "+c.name+": "+err.Error()+"\n"))
		s.finishCommand(c, exitNotStarted)
		return nil
	}
	s.mu.Lock()
	c.proc = proc
	pending := c.pending
	c.pending = nil
	s.mu.Unlock()
	for _, sig := range pending {
		s.signal(c, proc, sig) // asked for while Start ran
	}
	if sess.ctx.Err() != nil {
		_ = proc.Signal(signalKill) // the session stopped while Start ran
	}
	var timer *time.Timer
	if c.timeoutMs != nil {
		timer = time.AfterFunc(time.Duration(*c.timeoutMs)*time.Millisecond, func() {
			s.mu.Lock()
			running := c.exitCode == nil
			if running {
				c.timedOut = true
				c.signals = append(c.signals, signalKill)
			}
			s.mu.Unlock()
			if running {
				_ = proc.Signal(signalKill)
			}
		})
	}
	go func() {
		code, err := proc.Wait()
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			s.log.Warn("local: executor wait failed", "command", c.id, "err", err)
			if code == 0 {
				code = 1
			}
		}
		s.finishCommand(c, code)
	}()
	return nil
}

// checkRun checks what a client asks to run in sess, through the command
// endpoint or on a terminal, and resolves its working directory (asked,
// or the session's): the sandbox path, and the host path behind it, made
// inside the sandbox when missing and never through a link that leaves
// it.
func (s *Server) checkRun(sess *sessionRec, name string, env map[string]string, asked string) (cwd, hostCwd string, aerr *apiError) {
	if name == "" {
		return "", "", badRequest("command must not be empty.")
	}
	if aerr := s.envTooLarge(env); aerr != nil {
		return "", "", aerr
	}
	cwd = sess.cwd
	if asked != "" {
		cwd = s.resolvePath(sess.cwd, asked)
	}
	hostCwd, err := s.hostPath(sess.sb, cwd)
	if err == nil {
		hostCwd, err = makeDirIn(sess.sb.dir, hostCwd)
	}
	if err != nil {
		return "", "", badRequest("Invalid cwd %q: %v", asked, err)
	}
	return cwd, hostCwd, nil
}

// runEnv is the environment of a command of sess that asked for env: the
// sandbox's, with env over it. Called with s.mu held.
func (s *Server) runEnv(sess *sessionRec, env map[string]string) map[string]string {
	return mergeEnv(sess.sb.env, env)
}

// execCmd is what the executor gets to run a command of sess, whether
// it came through the command endpoint or a terminal: the sandbox's
// users, environment (env is runEnv's), working directory (from
// checkRun) and network policy are a terminal's as any command's. The
// caller sets its output.
func (s *Server) execCmd(sess *sessionRec, id, name string, args []string, env map[string]string, cwd, hostCwd string, sudo bool) *Cmd {
	cmd := &Cmd{
		SandboxName: sess.sb.name,
		SessionID:   sess.id,
		CommandID:   id,
		Name:        name,
		Args:        append([]string(nil), args...),
		Env:         mergeEnv(s.commandEnv(sess.sb), env),
		Cwd:         cwd,
		Sudo:        sudo,
		Dir:         sess.sb.dir,
		HostCwd:     hostCwd,
		EtcDir:      etcDir(sess.sb),
	}
	s.mu.Lock()
	if sess.sb.policySet && sess.policy != nil {
		cmd.NetworkPolicy = sess.policy.Mode
	}
	s.mu.Unlock()
	return cmd
}

// unregisterCommand forgets c, which never started, and releases what
// registerCommand took for it.
func (s *Server) unregisterCommand(c *commandRec) {
	s.mu.Lock()
	delete(c.sess.commands, c.id)
	if i := slices.Index(s.commands, c); i >= 0 {
		s.commands = slices.Delete(s.commands, i, i+1)
	}
	s.mu.Unlock()
	c.out.close()
	close(c.done)
	c.sess.ops.Done()
	s.wg.Done()
}

// finishCommand records the exit of c, then completes its output and releases
// the session and the server.
func (s *Server) finishCommand(c *commandRec, code int) {
	d := time.Since(c.started).Milliseconds()
	if !s.realClock {
		// An injected clock governs every reported time, durations too.
		d = max(0, s.nowMs()-c.startedAt)
	}
	s.mu.Lock()
	c.exitCode = ptr(code)
	c.durationMs = ptr(d)
	c.endedAt = s.nowMs()
	c.proc = nil // what the executor kept for it can go; the record stays
	s.mu.Unlock()
	// The exit is recorded before the log streams end, so a client that
	// reaches the end of the logs and asks finds the command finished.
	c.out.close()
	close(c.done)
	c.sess.ops.Done()
	s.wg.Done()
}

// streamAttached writes the NDJSON answer of a command run with wait:true:
// the started command, its output (when logs), then the finished command.
// Each line is flushed as it is written. A client that goes away stops the
// stream, not the command.
func (s *Server) streamAttached(w http.ResponseWriter, r *http.Request, c *commandRec, started wire.Command, logs bool) {
	w.Header().Set("Content-Type", wire.ContentNDJSON)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	nd := ndjsonWriter{w: w, rc: http.NewResponseController(w)}
	e := s.newEdge(r)
	defer e.stop()
	if nd.line(wire.CommandResponse{Command: started}) != nil {
		return
	}
	if (logs && !s.followOutput(e, &nd, c)) || !s.awaitCommand(e.ctx, c) || e.over() {
		if e.over() {
			cutConnection()
		}
		return
	}
	if s.hosted() && s.endedWithSession(c) {
		_ = nd.line(streamClosed)
		return
	}
	s.mu.Lock()
	final := commandWire(c)
	s.mu.Unlock()
	_ = nd.line(wire.CommandResponse{Command: final})
}

// awaitCommand waits until c has finished and reports whether it did; it
// gives up when ctx ends or the server closes. A command that finished as
// the server closed counts as finished, so its final answer still goes out.
func (s *Server) awaitCommand(ctx context.Context, c *commandRec) bool {
	select {
	case <-c.done:
		return true
	case <-ctx.Done():
		return false
	case <-s.baseCtx.Done():
		select {
		case <-c.done:
			return true
		default:
			return false
		}
	}
}

// followOutput writes every output frame of c, from the first, until the
// output is complete. It reports false when it stopped early (client gone,
// write failure, server closing, the edge's cut, or output no longer held,
// which ends the stream with an error frame).
func (s *Server) followOutput(e *edge, nd *ndjsonWriter, c *commandRec) bool {
	if err := c.out.follow(); err != nil {
		_ = nd.line(err.line())
		return false
	}
	defer c.out.unfollow()
	var from int64
	for !e.over() {
		frames, next, done, err := c.out.next(e.ctx, s.baseCtx.Done(), from)
		if ev, ok := err.(*evictedError); ok {
			_ = nd.line(ev.line())
			return false
		}
		if err != nil {
			return false
		}
		if done {
			return true
		}
		// A batch holds what was ready: it goes out in one flush, or in
		// several when it is large, so a reader of many short lines is
		// woken once per batch, and a single line still leaves at once.
		for _, f := range frames {
			if e.over() || nd.write(s.logFrame(f)) != nil {
				return false
			}
			if nd.pending >= flushBytes && nd.flush() != nil {
				return false
			}
		}
		if nd.flush() != nil {
			return false
		}
		from = next
	}
	return false
}

// flushBytes bounds the output a log stream holds back before it flushes
// within a batch of frames.
const flushBytes = 32 << 10

// logLine is one output line of an NDJSON stream.
type logLine struct {
	Stream string `json:"stream"`
	Data   string `json:"data"`
}

// ndjsonWriter writes one JSON value per line: line flushes it at once,
// write leaves it for the next flush.
type ndjsonWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	pending int // bytes written since the last flush
}

func (n *ndjsonWriter) line(v any) error {
	if err := n.write(v); err != nil {
		return err
	}
	return n.flush()
}

func (n *ndjsonWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := n.w.Write(b); err != nil {
		return err
	}
	n.pending += len(b)
	return nil
}

func (n *ndjsonWriter) flush() error {
	if n.pending == 0 {
		return nil
	}
	n.pending = 0
	return n.rc.Flush()
}

// lookupCommand returns command cid of session sid.
func (s *Server) lookupCommand(sid, cid string) (*commandRec, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sid]
	if sess == nil {
		return nil, notFound("Session %s was not found.", sid)
	}
	c := sess.commands[cid]
	if c == nil {
		return nil, notFound("Command %s was not found.", cid)
	}
	return c, nil
}

// handleListCommands serves GET …/sessions/{sid}/cmd: every command of
// the session, in the order they started, as {"commands": […]} without
// pagination, the answer the official Python SDK reads (its
// query_processes). Like a command of a stopped session, the list answers
// 410 once the session has stopped, unless WithFriendly.
func (s *Server) handleListCommands(w http.ResponseWriter, r *http.Request) *apiError {
	sess, aerr := s.lookupSession(r.PathValue("sid"), false)
	if aerr != nil {
		return aerr
	}
	s.mu.Lock()
	if s.hosted() && sess.status == statusStopped {
		s.mu.Unlock()
		return statusError(statusStopped)
	}
	cmds := slices.SortedFunc(maps.Values(sess.commands), func(a, b *commandRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]wire.Command, len(cmds))
	for i, c := range cmds {
		out[i] = commandWire(c)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, wire.ListCommandsResponse{Commands: out})
	return nil
}

// handleGetCommand serves GET …/cmd/{cid}[?wait=true]. With wait, hosted
// Vercel sends the status line and headers only when the command ends (and
// its edge cuts the request first when that takes too long); WithFriendly
// sends them at once and the body when the command ends.
func (s *Server) handleGetCommand(w http.ResponseWriter, r *http.Request) *apiError {
	sid, cid := r.PathValue("sid"), r.PathValue("cid")
	c, aerr := s.lookupCommand(sid, cid)
	if aerr == nil {
		aerr = s.goneAfterStop(c)
	}
	if aerr != nil {
		return aerr
	}
	if wait := r.URL.Query().Get("wait"); wait == "true" || wait == "1" {
		select {
		case <-c.done:
		default:
			if s.hosted() {
				return s.awaitHosted(w, r, c)
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
			if !s.awaitCommand(r.Context(), c) {
				return nil
			}
			s.mu.Lock()
			body, _ := json.Marshal(wire.CommandResponse{Command: commandWire(c)})
			s.mu.Unlock()
			_, _ = w.Write(body)
			return nil
		}
	}
	return s.writeLocked(w, func() any { return wire.CommandResponse{Command: commandWire(c)} })
}

// handleKill serves POST …/cmd/{cid}/kill.
func (s *Server) handleKill(w http.ResponseWriter, r *http.Request) *apiError {
	sid, cid := r.PathValue("sid"), r.PathValue("cid")
	c, aerr := s.lookupCommand(sid, cid)
	if aerr != nil {
		return aerr
	}
	var body struct {
		Signal *int `json:"signal"`
	}
	if aerr := decodeBody(r, &body); aerr != nil {
		return aerr
	}
	sig := signalTerm
	if body.Signal != nil {
		sig = *body.Signal
	}
	if sig < 1 || sig > 64 {
		return badRequest("Invalid signal %d.", sig)
	}
	s.mu.Lock()
	proc := c.proc
	running := c.exitCode == nil
	if running {
		c.signals = append(c.signals, sig)
		if proc == nil {
			// The executor is starting it: startCommand delivers it.
			c.pending = append(c.pending, sig)
		}
	}
	s.mu.Unlock()
	if running && proc != nil {
		s.signal(c, proc, sig)
	}
	return s.writeLocked(w, func() any { return wire.CommandResponse{Command: commandWire(c)} })
}

// signal sends sig to proc, the process of c, as a kill request asks:
// in the default mode to the command's process alone where the executor
// can (see LeaderSignaler).
func (s *Server) signal(c *commandRec, proc Process, sig int) {
	signal := proc.Signal
	if ls, ok := proc.(LeaderSignaler); ok && s.hosted() {
		signal = ls.SignalLeader
	}
	if err := signal(sig); err != nil {
		s.log.Warn("local: signal failed", "command", c.id, "signal", sig, "err", err)
	}
}

// handleLogs serves GET …/cmd/{cid}/logs: every output frame from the
// start, then live output until the command ends.
func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) *apiError {
	sid, cid := r.PathValue("sid"), r.PathValue("cid")
	c, aerr := s.lookupCommand(sid, cid)
	if aerr == nil {
		aerr = s.goneAfterStop(c)
	}
	if aerr == nil {
		aerr = s.logsRaceCleanup(c)
	}
	if aerr != nil {
		return aerr
	}
	e := s.newEdge(r)
	defer e.stop()
	w.Header().Set("Content-Type", wire.ContentNDJSON)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	nd := ndjsonWriter{w: w, rc: http.NewResponseController(w)}
	if err := nd.rc.Flush(); err != nil {
		return nil
	}
	if !s.followOutput(e, &nd, c) && e.over() {
		cutConnection()
	}
	return nil
}
