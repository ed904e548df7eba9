package sandboxtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"mime"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// ErrInvalidFault is matched (errors.Is) by every error about a fault that
// cannot be injected: a bad text form, an unknown key, or a combination of
// fields that makes no sense.
var ErrInvalidFault = errors.New("sandboxtest: invalid fault")

func invalidFault(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidFault, fmt.Sprintf(format, args...))
}

// ResetMode says when a fault cuts the connection.
type ResetMode int

const (
	// NoReset leaves the connection alone.
	NoReset ResetMode = iota
	// ResetBeforeHeaders closes the connection with a TCP reset before
	// any byte of the answer is sent.
	ResetBeforeHeaders
	// ResetAfterHeaders sends the status line, the headers and part of
	// the body (see Fault.AfterFrames), then resets the connection.
	ResetAfterHeaders
)

// String returns "before", "after" or "" (NoReset), as in the text form.
func (m ResetMode) String() string {
	switch m {
	case ResetBeforeHeaders:
		return "before"
	case ResetAfterHeaders:
		return "after"
	case NoReset:
		return ""
	}
	return "ResetMode(" + strconv.Itoa(int(m)) + ")"
}

// Fault describes a failure the server injects into the requests it
// matches. Inject it with Server.Inject.
//
// A fault matches a request by Method and Path; among the faults that
// match, the first injected one that fires shapes the answer (Times and
// Probability decide whether it fires). Faults apply to requests that pass
// authentication. A faulted request is still recorded by Requests, with
// the status the client saw (0 after a reset before the headers) and the
// fault's text form in Request.Fault.
//
// What a firing fault does, in order:
//
//  1. Latency: the answer waits this long (the request's context and
//     Close end the wait).
//  2. Expire: the session the path names (by session id, or the current
//     session of the sandbox it names) expires as if its timeout had passed,
//     so the real handler answers 410 sandbox_stopped. With AfterHandler the
//     session expires after the real handler ran, so the next call gets the
//     410.
//  3. The answer. With Status or Body, the server answers with that status
//     and either Body or the API's JSON error envelope
//     {"error":{"code":Code,"message":Message}}, plus a Retry-After header
//     when RetryAfter is set; the real handler does not run, so a command
//     POST that gets a 500 starts nothing. With AfterHandler the real
//     handler runs to its end first (its answer is discarded), so a test can
//     prove that a command ran once while the client saw a 500. Without
//     Status or Body, the real handler answers, shaped by Reset, Cut and
//     Stall.
//
// The body faults (Cut, Stall and ResetAfterHeaders on the real handler's
// answer) act once AfterFrames newline-terminated lines of the body have
// been sent, so an NDJSON stream can be cut after exactly N frames. With
// AfterFrames 0 they act at the first body write: Cut sends an empty body,
// Stall stalls before the first byte, and a reset sends half of that first
// write before it resets.
//
// # Text form
//
// ParseFault and the standalone server's --fault flag take a fault as one
// line:
//
//	[METHOD] PATH [key[=value] ...]
//
// METHOD is an HTTP method or * (any; the default). PATH is a pattern
// that starts with /, or * (any path); see Fault.Path. The keys are
//
//	status=N          answer status N
//	code=S            error code (default: derived from the status)
//	message=S         error message (default: derived from the status)
//	retry-after=D     Retry-After header; D in seconds (60) or a Go duration (1500ms)
//	times=N           fire N times only
//	p=F               fire with probability F (0 < F <= 1)
//	latency=D         delay the answer by the Go duration D
//	reset=before|after  reset the connection before or after the headers
//	after-frames=N    body faults act after N lines of body
//	cut[=N]           end the body cleanly after N lines (default 0)
//	stall=D           stall the body for the Go duration D
//	expire            expire the session the path names
//	after-handler     run the real handler first, then answer with the fault
//	body=S            answer with this body instead of the error envelope
//	content-type=S    content type of Body (default application/json)
//
// Values with spaces are written as Go double-quoted strings:
// message="The concurrency limit has been exceeded.". For example:
//
//	POST /v2/sandboxes/sessions/*/cmd status=500 times=1
//	GET /v2/sandboxes/** status=503 times=2
//	* * status=429 retry-after=60
//	POST /v2/sandboxes/sessions/*/cmd cut=2
//
// Fault.String returns this form, and ParseFault(f.String()) gives f back.
type Fault struct {
	// Method is the HTTP method to match; "" or "*" matches any.
	Method string
	// Path is the path pattern to match, with or without the /api prefix
	// (requests match with and without it too). It is split on "/"; each
	// segment is matched with path.Match (so "*" is one segment and
	// "cmd_*" a prefix), and a final "**" segment matches any rest,
	// including nothing. "" or "*" matches every path. Example:
	// "/v2/sandboxes/sessions/*/cmd".
	Path string

	// Status is the status to answer with, instead of the real handler.
	Status int
	// Code and Message fill the error envelope. Empty: derived from Status.
	Code    string
	Message string
	// RetryAfter, when positive, is sent as a Retry-After header in whole
	// seconds, rounded up.
	RetryAfter time.Duration
	// Body, when not empty, is the answer's body instead of the error
	// envelope (with Status 200 when Status is 0), for example malformed
	// JSON.
	Body string
	// ContentType is the Content-Type of Body. Default application/json.
	ContentType string

	// Times is how many times the fault fires; 0 is without limit.
	Times int
	// Probability, when in (0, 1), is the chance that the fault fires on
	// a matching request. 0 means always. The draws come from the server's
	// randomness, which WithSeed makes reproducible.
	Probability float64

	// Latency delays the answer.
	Latency time.Duration
	// Reset cuts the connection with a TCP reset. Note that Go's
	// http.Transport itself re-sends a GET (or any request it deems
	// idempotent) whose reused connection is reset before the answer
	// begins; each attempt counts as a hit.
	Reset ResetMode
	// Cut ends the real handler's body cleanly after AfterFrames lines:
	// for an NDJSON stream, the frames that follow (and the final one) are
	// never sent, and the response ends as if complete.
	Cut bool
	// Stall holds the real handler's body for this long after AfterFrames
	// lines, then lets it continue.
	Stall time.Duration
	// AfterFrames is the number of newline-terminated body lines that are
	// sent before Cut, Stall or a reset after the headers acts.
	AfterFrames int

	// Expire expires the session the path names (see the Fault doc).
	Expire bool
	// AfterHandler runs the real handler to its end before the fault's
	// answer (Status, Body or a reset) replaces its own.
	AfterHandler bool
}

// RateLimit returns a fault that answers the next n requests with 429
// rate_limited and, when retryAfter is positive, a Retry-After header.
// Set Method and Path on the result to narrow it.
func RateLimit(n int, retryAfter time.Duration) Fault {
	return Fault{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Message: "The concurrency limit has been exceeded.", RetryAfter: retryAfter, Times: n}
}

// Validate reports why f cannot be injected, as an error matching
// ErrInvalidFault, or nil.
func (f Fault) Validate() error {
	if f.Method != "" && f.Method != "*" && !validToken(f.Method) {
		return invalidFault("method %q is not an HTTP method", f.Method)
	}
	if f.Path != "" && f.Path != "*" {
		if !strings.HasPrefix(f.Path, "/") {
			return invalidFault("path %q must start with / (or be *)", f.Path)
		}
		for _, seg := range strings.Split(strings.Trim(f.Path, "/"), "/") {
			if _, err := path.Match(seg, ""); err != nil {
				return invalidFault("path %q: bad pattern %q", f.Path, seg)
			}
		}
	}
	switch {
	case f.Status != 0 && (f.Status < 200 || f.Status > 599):
		return invalidFault("status %d is not in 200..599", f.Status)
	case f.Times < 0:
		return invalidFault("times %d is negative", f.Times)
	case f.Probability < 0 || f.Probability > 1 || f.Probability != f.Probability:
		return invalidFault("probability %v is not in [0, 1]", f.Probability)
	case f.Latency < 0 || f.Stall < 0 || f.RetryAfter < 0:
		return invalidFault("durations must not be negative")
	case f.AfterFrames < 0:
		return invalidFault("after-frames %d is negative", f.AfterFrames)
	case f.Reset < NoReset || f.Reset > ResetAfterHeaders:
		return invalidFault("unknown reset mode %d", int(f.Reset))
	}
	answers := f.Status != 0 || f.Body != ""
	bodyFault := f.Cut || f.Stall > 0
	switch {
	case bodyFault && f.AfterHandler:
		return invalidFault("cut and stall cannot be combined with after-handler")
	case (f.RetryAfter > 0 || f.Code != "" || f.Message != "") && !answers:
		return invalidFault("code, message and retry-after need a status")
	case f.ContentType != "" && f.Body == "":
		return invalidFault("content-type needs a body")
	case f.AfterHandler && !answers && f.Reset == NoReset && !f.Expire:
		return invalidFault("after-handler needs a status, body, reset or expire")
	case !answers && !bodyFault && f.Reset == NoReset && f.Latency == 0 && !f.Expire:
		return invalidFault("the fault does nothing: set a status, body, reset, cut, stall, latency or expire")
	case bodyFault && answers:
		return invalidFault("cut and stall shape the real handler's answer; they cannot be combined with a status or body")
	case f.Cut && f.Reset != NoReset:
		return invalidFault("cut and reset exclude each other")
	case f.AfterHandler && f.Reset == ResetAfterHeaders && !answers:
		return invalidFault("after-handler with reset=after needs a status or body to send before the reset")
	case f.Reset == ResetBeforeHeaders && answers && !f.AfterHandler:
		return invalidFault("reset=before sends no answer; drop the status and body")
	}
	return nil
}

// validToken reports whether s is an HTTP token (a method name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// status returns the status the fault answers with, 0 when the real
// handler answers.
func (f *Fault) status() int {
	if f.Status != 0 {
		return f.Status
	}
	if f.Body != "" {
		return http.StatusOK
	}
	return 0
}

// matches reports whether f applies to a request for method and p (the
// path without /api).
func (f *Fault) matches(method, p string) bool {
	if f.Method != "" && f.Method != "*" && !strings.EqualFold(f.Method, method) {
		return false
	}
	return matchPath(f.Path, p)
}

// matchPath matches p against a Fault.Path pattern.
func matchPath(pattern, p string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	pattern = stripAPI(pattern)
	pat := strings.Split(strings.Trim(pattern, "/"), "/")
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, ps := range pat {
		if ps == "**" && i == len(pat)-1 {
			return true
		}
		if i >= len(segs) {
			return false
		}
		if ok, _ := path.Match(ps, segs[i]); !ok {
			return false
		}
	}
	return len(segs) == len(pat)
}

// stripAPI removes a leading /api from a path.
func stripAPI(p string) string {
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		return p[len("/api"):]
	}
	return p
}

// FaultHandle is an injected fault.
type FaultHandle struct {
	set *faultSet
	id  int64
	f   Fault
	txt string

	// hits is guarded by set.mu.
	hits int
}

// Hits is how many times the fault has fired so far.
func (h *FaultHandle) Hits() int {
	h.set.mu.Lock()
	defer h.set.mu.Unlock()
	return h.hits
}

// Fault returns the fault as injected.
func (h *FaultHandle) Fault() Fault { return h.f }

// ID is the fault's number, unique within its server.
func (h *FaultHandle) ID() int64 { return h.id }

// Remove stops the fault from firing. Requests it is already shaping are
// not affected. Removing it again does nothing.
func (h *FaultHandle) Remove() {
	h.set.mu.Lock()
	defer h.set.mu.Unlock()
	for i, x := range h.set.list {
		if x == h {
			h.set.list = append(h.set.list[:i:i], h.set.list[i+1:]...)
			return
		}
	}
}

// faultSet holds the injected faults of a server.
type faultSet struct {
	mu     sync.Mutex
	list   []*FaultHandle
	nextID int64
	rng    *mrand.Rand // created on first use, from the server's seed
}

// Inject adds a fault; it applies to requests that arrive from now on.
// It panics when f is invalid (see Fault.Validate), as faults written in
// a test are fixed; use ParseFault and Validate for faults from input.
// Inject is safe to call while requests are in flight.
func (s *Server) Inject(f Fault) *FaultHandle {
	h, err := s.inject(f)
	if err != nil {
		panic(err)
	}
	return h
}

func (s *Server) inject(f Fault) (*FaultHandle, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	fs := &s.faults
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.nextID++
	h := &FaultHandle{set: fs, id: fs.nextID, f: f, txt: f.String()}
	fs.list = append(fs.list, h)
	return h, nil
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	s.faults.list = nil
	s.faults.mu.Unlock()
}

// Faults returns the faults that are injected now, in injection order.
func (s *Server) Faults() []*FaultHandle {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return append([]*FaultHandle(nil), s.faults.list...)
}

// match returns the fault that fires for r, if any, and counts its hit.
func (fs *faultSet) match(s *Server, r *http.Request, p string) *FaultHandle {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, h := range fs.list {
		f := &h.f
		if !f.matches(r.Method, p) || (f.Times > 0 && h.hits >= f.Times) {
			continue
		}
		if f.Probability > 0 && f.Probability < 1 && fs.float(s) >= f.Probability {
			continue
		}
		h.hits++
		return h
	}
	return nil
}

// float draws from the fault randomness. Called with fs.mu held.
func (fs *faultSet) float(s *Server) float64 {
	if fs.rng == nil {
		var seed [2]uint64
		if s.cfg.seed != nil {
			// A stream of its own, so that faults do not shift the ids.
			seed = [2]uint64{*s.cfg.seed, 0x6661756c74} // "fault"
		} else {
			var b [16]byte
			_, _ = rand.Read(b[:])
			seed = [2]uint64{binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])}
		}
		fs.rng = mrand.New(mrand.NewPCG(seed[0], seed[1]))
	}
	return fs.rng.Float64()
}

// serveFault answers r as the fault h says; p is the path without /api.
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, p string, h *FaultHandle) {
	f := &h.f
	if sw, ok := w.(*statusWriter); ok {
		sw.entry.fault.Store(&h.txt)
	}
	s.log.Debug("sandboxtest: fault", "method", r.Method, "path", r.URL.Path, "fault", h.txt)
	if f.Latency > 0 && !s.pause(r.Context(), f.Latency) {
		return
	}
	if f.Expire && !f.AfterHandler {
		s.expireNamed(p)
	}
	if f.AfterHandler {
		// The real handler runs to its end; its answer is discarded.
		dw := &captureWriter{h: http.Header{}}
		if aerr := s.route(dw, r, p); aerr != nil {
			writeError(dw, aerr)
		}
		if f.Expire {
			s.expireNamed(p)
		}
		switch {
		case f.status() != 0:
			s.writeFaultAnswer(w, f)
		case f.Reset == ResetBeforeHeaders:
			resetConn(w, false)
		default:
			// Expire only: the real answer goes out as it was captured.
			writeCaptured(w, dw.status, dw.h, dw.buf.Bytes())
		}
		return
	}
	switch {
	case f.status() != 0:
		s.writeFaultAnswer(w, f)
		return
	case f.Reset == ResetBeforeHeaders:
		resetConn(w, false)
		return
	}
	if f.Cut || f.Stall > 0 || f.Reset == ResetAfterHeaders {
		w = &faultWriter{ResponseWriter: w, s: s, ctx: r.Context(), f: f, left: f.AfterFrames}
	}
	if aerr := s.route(w, r, p); aerr != nil {
		writeError(w, aerr)
	}
}

// writeFaultAnswer writes the fault's own answer, and resets the
// connection halfway through its body when asked to.
func (s *Server) writeFaultAnswer(w http.ResponseWriter, f *Fault) {
	body := []byte(f.Body)
	ct := f.ContentType
	if f.Body == "" {
		e := &apiError{status: f.status(), code: f.Code, message: f.Message}
		if e.code == "" {
			e.code = defaultCode(e.status)
		}
		if e.message == "" {
			e.message = http.StatusText(e.status)
			if e.message == "" {
				e.message = "Injected fault"
			}
		}
		body, _ = json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: e.code, Message: e.message}})
		ct = "application/json; charset=utf-8"
	} else if ct == "" {
		ct = "application/json; charset=utf-8"
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if f.RetryAfter > 0 {
		secs := (f.RetryAfter + time.Second - 1) / time.Second
		h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	w.WriteHeader(f.status())
	if f.Reset == ResetAfterHeaders {
		_, _ = w.Write(body[:len(body)/2])
		resetConn(w, true)
		return
	}
	_, _ = w.Write(body)
}

// writeCaptured writes a captured answer.
func writeCaptured(w http.ResponseWriter, status int, hdr http.Header, body []byte) {
	for k, v := range hdr {
		w.Header()[k] = v
	}
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// defaultCode is the error code of an injected status without one.
func defaultCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return codeBadRequest
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return codeForbidden
	case http.StatusNotFound:
		return codeNotFound
	case http.StatusConflict:
		return "conflict"
	case http.StatusGone:
		return codeStopped
	case http.StatusUnprocessableEntity:
		return codeStopping
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusInternalServerError:
		return "internal_server_error"
	case http.StatusBadGateway:
		return "bad_gateway"
	case http.StatusServiceUnavailable:
		return codeUnavailable
	case http.StatusGatewayTimeout:
		return "gateway_timeout"
	}
	return "injected_fault"
}

// pause waits d and reports whether it waited in full; the request's
// context and Close end it early.
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.baseCtx.Done():
		return false
	}
}

// expireNamed expires the session path p names: the session of
// /v2/sandboxes/sessions/{id}/…, or the current session of
// /v2/sandboxes/{name}/….
func (s *Server) expireNamed(p string) {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) < 3 || segs[1] != "sandboxes" {
		return
	}
	var sid string
	switch segs[2] {
	case "sessions":
		if len(segs) < 4 {
			return
		}
		sid = segs[3]
	case "snapshots":
		return
	default:
		s.mu.Lock()
		if sb := s.sandboxes[segs[2]]; sb != nil && sb.current != nil {
			sid = sb.current.id
		}
		s.mu.Unlock()
	}
	if sid != "" {
		_ = s.ExpireSession(sid)
	}
}

// resetConn closes the client connection with a TCP reset, after sending
// what has been written so far. When the connection cannot be taken over
// (HTTP/2, or a writer of one's own), the handler is aborted instead,
// which net/http turns into a cut connection or stream.
func resetConn(w http.ResponseWriter, headersSent bool) {
	rc := http.NewResponseController(w)
	if headersSent {
		_ = rc.Flush()
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if buf != nil {
		_ = buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		// Linger 0: close sends RST instead of FIN. Give the kernel a
		// moment to put what was written on the wire first, so that the
		// client receives the bytes before the reset.
		time.Sleep(10 * time.Millisecond)
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// faultWriter passes the real handler's answer through and applies the
// body faults once left lines have been written.
type faultWriter struct {
	http.ResponseWriter
	s           *Server
	ctx         context.Context
	f           *Fault
	left        int  // lines to pass before acting
	acted       bool // the fault has acted
	done        bool // cut or reset: every later write fails
	wroteHeader bool
}

// errFaultCut is what the real handler's writes return after a cut.
var errFaultCut = errors.New("sandboxtest: response cut by an injected fault")

func (w *faultWriter) WriteHeader(code int) {
	w.wroteHeader = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errFaultCut
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.acted {
		return w.ResponseWriter.Write(p)
	}
	n := 0
	for w.left > 0 {
		i := bytes.IndexByte(p[n:], '\n')
		if i < 0 {
			break
		}
		n += i + 1
		w.left--
	}
	if w.left > 0 {
		return w.ResponseWriter.Write(p)
	}
	// The last allowed line ends at p[n]: the fault acts now.
	w.acted = true
	if n > 0 {
		if _, err := w.ResponseWriter.Write(p[:n]); err != nil {
			return 0, err
		}
	}
	rest := p[n:]
	switch {
	case w.f.Stall > 0:
		_ = http.NewResponseController(w.ResponseWriter).Flush()
		w.s.pause(w.ctx, w.f.Stall)
		if len(rest) == 0 {
			return n, nil
		}
		m, err := w.ResponseWriter.Write(rest)
		return n + m, err
	case w.f.Reset == ResetAfterHeaders:
		if n == 0 && len(rest) > 1 {
			_, _ = w.ResponseWriter.Write(rest[:len(rest)/2])
		}
		w.done = true
		resetConn(w.ResponseWriter, true)
		return n, errFaultCut
	default: // Cut
		w.done = true
		if len(rest) == 0 {
			return n, nil
		}
		return n, errFaultCut
	}
}

// Flush flushes unless the answer was cut.
func (w *faultWriter) Flush() {
	if !w.done {
		if !w.wroteHeader {
			w.WriteHeader(http.StatusOK)
		}
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// captureWriter takes the answer of a handler run under AfterHandler
// (keeping at most maxJSONBody bytes of it).
type captureWriter struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (d *captureWriter) Header() http.Header { return d.h }

func (d *captureWriter) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	if d.buf.Len() < maxJSONBody {
		d.buf.Write(p)
	}
	return len(p), nil
}

func (d *captureWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}

// Flush does nothing; it lets streaming handlers run to their end.
func (d *captureWriter) Flush() {}

// String returns the fault in the text form ParseFault reads.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(cmpOr(f.Method, "*"))
	b.WriteByte(' ')
	b.WriteString(cmpOr(f.Path, "*"))
	kv := func(k, v string) {
		b.WriteByte(' ')
		b.WriteString(k)
		if v != "" {
			b.WriteByte('=')
			b.WriteString(quoteValue(v))
		}
	}
	if f.Status != 0 {
		kv("status", strconv.Itoa(f.Status))
	}
	if f.Code != "" {
		kv("code", f.Code)
	}
	if f.Message != "" {
		kv("message", f.Message)
	}
	if f.RetryAfter > 0 {
		if f.RetryAfter%time.Second == 0 {
			kv("retry-after", strconv.FormatInt(int64(f.RetryAfter/time.Second), 10))
		} else {
			kv("retry-after", f.RetryAfter.String())
		}
	}
	if f.Body != "" {
		kv("body", f.Body)
	}
	if f.ContentType != "" {
		kv("content-type", f.ContentType)
	}
	if f.Times != 0 {
		kv("times", strconv.Itoa(f.Times))
	}
	if f.Probability != 0 {
		kv("p", strconv.FormatFloat(f.Probability, 'g', -1, 64))
	}
	if f.Latency != 0 {
		kv("latency", f.Latency.String())
	}
	if f.Reset != NoReset {
		kv("reset", f.Reset.String())
	}
	if f.Cut {
		kv("cut", strconv.Itoa(f.AfterFrames))
	} else if f.AfterFrames != 0 {
		kv("after-frames", strconv.Itoa(f.AfterFrames))
	}
	if f.Stall != 0 {
		kv("stall", f.Stall.String())
	}
	if f.Expire {
		kv("expire", "")
	}
	if f.AfterHandler {
		kv("after-handler", "")
	}
	return b.String()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// quoteValue quotes v when the text form needs it.
func quoteValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\r\n\"\\=") || strconv.Quote(v) != `"`+v+`"` {
		return strconv.Quote(v)
	}
	return v
}

// flagKeys are the keys of the text form that may stand without a value.
var flagKeys = map[string]bool{"cut": true, "expire": true, "after-handler": true}

// ParseFault reads a fault in the text form described in the Fault
// documentation, such as
//
//	POST /v2/sandboxes/sessions/*/cmd status=500 times=1
//
// and validates it. Errors match ErrInvalidFault.
func ParseFault(text string) (Fault, error) {
	toks, err := splitFault(text)
	if err != nil {
		return Fault{}, err
	}
	var f Fault
	i := 0
	isPath := func(t string) bool { return strings.HasPrefix(t, "/") || t == "*" }
	if i < len(toks) && !strings.Contains(toks[i], "=") && !strings.HasPrefix(toks[i], "/") && !flagKeys[toks[i]] {
		if toks[i] != "*" {
			f.Method = strings.ToUpper(toks[i])
		}
		i++
	}
	if i < len(toks) && isPath(toks[i]) {
		if toks[i] != "*" {
			f.Path = toks[i]
		}
		i++
	}
	seen := map[string]bool{}
	for _, tok := range toks[i:] {
		k, v, hasValue := strings.Cut(tok, "=")
		if seen[k] {
			return Fault{}, invalidFault("%q given twice", k)
		}
		seen[k] = true
		if !hasValue && !flagKeys[k] {
			return Fault{}, invalidFault("%q needs a value (%s=…)", k, k)
		}
		if hasValue {
			if v, err = unquoteValue(v); err != nil {
				return Fault{}, invalidFault("%s: %v", k, err)
			}
		}
		if err := f.set(k, v, hasValue); err != nil {
			return Fault{}, err
		}
	}
	if err := f.Validate(); err != nil {
		return Fault{}, err
	}
	return f, nil
}

// set applies one key of the text form.
func (f *Fault) set(k, v string, hasValue bool) error {
	var err error
	num := func() int {
		var n int
		n, err = strconv.Atoi(v)
		if err != nil {
			err = invalidFault("%s=%q is not a whole number", k, v)
		}
		return n
	}
	dur := func() time.Duration {
		var d time.Duration
		d, err = time.ParseDuration(v)
		if err != nil {
			err = invalidFault("%s=%q is not a duration such as 1.5s or 200ms", k, v)
		}
		return d
	}
	switch k {
	case "status":
		f.Status = num()
	case "code":
		f.Code = v
	case "message":
		f.Message = v
	case "retry-after":
		if n, nerr := strconv.Atoi(v); nerr == nil {
			f.RetryAfter = time.Duration(n) * time.Second
		} else {
			f.RetryAfter = dur()
		}
	case "body":
		f.Body = v
	case "content-type":
		f.ContentType = v
	case "times":
		f.Times = num()
	case "p", "probability":
		f.Probability, err = strconv.ParseFloat(v, 64)
		if err != nil {
			err = invalidFault("%s=%q is not a number", k, v)
		}
	case "latency":
		f.Latency = dur()
	case "reset":
		switch v {
		case "before":
			f.Reset = ResetBeforeHeaders
		case "after":
			f.Reset = ResetAfterHeaders
		default:
			err = invalidFault("reset=%q: want before or after", v)
		}
	case "after-frames":
		f.AfterFrames = num()
	case "cut":
		f.Cut = true
		if hasValue {
			f.AfterFrames = num()
		}
	case "stall":
		f.Stall = dur()
	case "expire", "after-handler":
		on := true
		if hasValue {
			on, err = strconv.ParseBool(v)
			if err != nil {
				err = invalidFault("%s=%q is not a boolean", k, v)
			}
		}
		if k == "expire" {
			f.Expire = on
		} else {
			f.AfterHandler = on
		}
	default:
		return invalidFault("unknown key %q", k)
	}
	return err
}

// splitFault splits the text form into tokens, keeping Go-quoted values
// (with their quotes) inside their token.
func splitFault(text string) ([]string, error) {
	var toks []string
	i := 0
	for {
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if i == len(text) {
			break
		}
		start := i
		for i < len(text) && !isSpace(text[i]) {
			if text[i] == '"' {
				q, err := strconv.QuotedPrefix(text[i:])
				if err != nil {
					return nil, invalidFault("unterminated quoted value at %q", text[i:])
				}
				i += len(q)
				continue
			}
			i++
		}
		toks = append(toks, text[start:i])
	}
	if len(toks) == 0 {
		return nil, invalidFault("empty fault")
	}
	return toks, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func unquoteValue(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	if strings.Contains(v, `"`) {
		return "", errors.New("a quoted value must be quoted whole")
	}
	return v, nil
}

// faultJSON is the JSON form of a Fault. Durations are Go duration
// strings ("1.5s"); a number is read as seconds.
type faultJSON struct {
	Method       string   `json:"method,omitempty"`
	Path         string   `json:"path,omitempty"`
	Status       int      `json:"status,omitempty"`
	Code         string   `json:"code,omitempty"`
	Message      string   `json:"message,omitempty"`
	RetryAfter   duration `json:"retryAfter,omitempty"`
	Body         string   `json:"body,omitempty"`
	ContentType  string   `json:"contentType,omitempty"`
	Times        int      `json:"times,omitempty"`
	Probability  float64  `json:"probability,omitempty"`
	Latency      duration `json:"latency,omitempty"`
	Reset        string   `json:"reset,omitempty"`
	Cut          bool     `json:"cut,omitempty"`
	Stall        duration `json:"stall,omitempty"`
	AfterFrames  int      `json:"afterFrames,omitempty"`
	Expire       bool     `json:"expire,omitempty"`
	AfterHandler bool     `json:"afterHandler,omitempty"`
}

// duration is a time.Duration in JSON: a Go duration string, or a number
// of seconds.
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 1.5s or 200ms", s)
		}
		*d = duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("%s is neither a duration string nor a number of seconds", b)
	}
	*d = duration(secs * float64(time.Second))
	return nil
}

// MarshalJSON encodes f as a JSON object with the keys method, path,
// status, code, message, retryAfter, body, contentType, times,
// probability, latency, reset ("before" or "after"), cut, stall,
// afterFrames, expire and afterHandler. Durations are Go duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultJSON{
		Method: f.Method, Path: f.Path, Status: f.Status, Code: f.Code, Message: f.Message,
		RetryAfter: duration(f.RetryAfter), Body: f.Body, ContentType: f.ContentType,
		Times: f.Times, Probability: f.Probability, Latency: duration(f.Latency),
		Reset: f.Reset.String(), Cut: f.Cut, Stall: duration(f.Stall), AfterFrames: f.AfterFrames,
		Expire: f.Expire, AfterHandler: f.AfterHandler,
	})
}

// UnmarshalJSON decodes the form MarshalJSON writes; durations may also
// be numbers of seconds. Unknown keys are an error. It does not validate
// the fault (see Validate).
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return invalidFault("%v", err)
	}
	out := Fault{
		Method: j.Method, Path: j.Path, Status: j.Status, Code: j.Code, Message: j.Message,
		RetryAfter: time.Duration(j.RetryAfter), Body: j.Body, ContentType: j.ContentType,
		Times: j.Times, Probability: j.Probability, Latency: time.Duration(j.Latency),
		Cut: j.Cut, Stall: time.Duration(j.Stall), AfterFrames: j.AfterFrames,
		Expire: j.Expire, AfterHandler: j.AfterHandler,
	}
	switch j.Reset {
	case "":
	case "before":
		out.Reset = ResetBeforeHeaders
	case "after":
		out.Reset = ResetAfterHeaders
	default:
		return invalidFault("reset %q: want before or after", j.Reset)
	}
	*f = out
	return nil
}

// ControlPrefix is the path under which a server made with WithControl
// serves its control endpoint:
//
//	GET    /_sandboxtest/faults       the injected faults, with their hits
//	POST   /_sandboxtest/faults       inject a fault: a JSON Fault (see
//	                                  Fault.MarshalJSON), or with Content-Type
//	                                  text/plain its text form; answers 201
//	DELETE /_sandboxtest/faults       remove every fault
//	DELETE /_sandboxtest/faults/{id}  remove one fault
//	GET    /_sandboxtest/requests     the requests received (see Requests)
//
// Every call needs the server's bearer token. Control calls are not
// recorded by Requests and are never faulted.
const ControlPrefix = "/_sandboxtest"

// WithControl serves the control endpoint (see ControlPrefix), so that
// tests written in other languages can inject faults and read the request
// log over HTTP.
func WithControl(on bool) Option { return func(c *config) { c.control = on } }

func isControlPath(p string) bool {
	return p == ControlPrefix || strings.HasPrefix(p, ControlPrefix+"/")
}

// faultInfo is a fault as the control endpoint reports it.
type faultInfo struct {
	ID    int64  `json:"id"`
	Text  string `json:"text"`
	Fault Fault  `json:"fault"`
	Hits  int    `json:"hits"`
}

// requestInfo is a request as the control endpoint reports it.
type requestInfo struct {
	Time     string              `json:"time"`
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	Query    map[string][]string `json:"query,omitempty"`
	Header   map[string][]string `json:"header,omitempty"`
	Body     json.RawMessage     `json:"body,omitempty"`
	BodySize int64               `json:"bodySize"`
	Status   int                 `json:"status"`
	Fault    string              `json:"fault,omitempty"`
}

// serveControl answers a call of the control endpoint.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" ||
		(s.cfg.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.token)) != 1) {
		writeError(w, errorf(http.StatusForbidden, codeForbidden, "Not authorized"))
		return
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, ControlPrefix), "/")
	switch {
	case rest == "faults":
		switch r.Method {
		case http.MethodGet:
			hs := s.Faults()
			out := make([]faultInfo, len(hs))
			for i, h := range hs {
				out[i] = faultInfo{ID: h.id, Text: h.txt, Fault: h.f, Hits: h.Hits()}
			}
			writeJSON(w, http.StatusOK, map[string]any{"faults": out})
		case http.MethodPost:
			f, err := readFault(r)
			var h *FaultHandle
			if err == nil {
				h, err = s.inject(f)
			}
			if err != nil {
				writeError(w, badRequest("%v", err))
				return
			}
			writeJSON(w, http.StatusCreated, faultInfo{ID: h.id, Text: h.txt, Fault: h.f})
		case http.MethodDelete:
			s.ClearFaults()
			w.WriteHeader(http.StatusNoContent)
		default:
			writeError(w, methodNotAllowed(w, "GET, POST, DELETE"))
		}
	case strings.HasPrefix(rest, "faults/"):
		if r.Method != http.MethodDelete {
			writeError(w, methodNotAllowed(w, "DELETE"))
			return
		}
		id, err := strconv.ParseInt(strings.TrimPrefix(rest, "faults/"), 10, 64)
		for _, h := range s.Faults() {
			if err == nil && h.id == id {
				h.Remove()
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		writeError(w, notFound("No fault %q.", strings.TrimPrefix(rest, "faults/")))
	case rest == "requests":
		if r.Method != http.MethodGet {
			writeError(w, methodNotAllowed(w, "GET"))
			return
		}
		reqs := s.Requests()
		out := make([]requestInfo, len(reqs))
		for i, q := range reqs {
			out[i] = requestInfo{Time: q.Time.UTC().Format(time.RFC3339Nano), Method: q.Method, Path: q.Path,
				Query: q.Query, Header: q.Header, BodySize: q.BodySize, Status: q.Status, Fault: q.Fault}
			if len(q.Body) > 0 && json.Valid(q.Body) {
				out[i].Body = q.Body
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"requests": out})
	default:
		writeError(w, notFoundRoute(r))
	}
}

// readFault reads the fault of a POST to the control endpoint.
func readFault(r *http.Request) (Fault, error) {
	data, aerr := readBody(r)
	if aerr != nil {
		return Fault{}, aerr
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "text/plain" {
		return ParseFault(string(data))
	}
	var f Fault
	if err := json.Unmarshal(data, &f); err != nil {
		if errors.Is(err, ErrInvalidFault) {
			return Fault{}, err
		}
		return Fault{}, invalidFault("%v", err)
	}
	return f, nil
}
