// Package fault injects failures into the answers of a local Vercel
// Sandbox API (package sandbox/local): error statuses, 429s with
// Retry-After, latency, connection resets, NDJSON streams cut after N
// frames, stalled bodies, and sessions and tokens that expire mid-work. It holds the
// Fault model with its text and JSON forms, the Injector that applies
// faults as a local.Middleware, and the control endpoint that lets tests
// in other languages manage faults over HTTP.
package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// ErrInvalid is matched (errors.Is) by every error about a fault that
// cannot be injected: a bad text form, an unknown key, or a combination of
// fields that makes no sense.
var ErrInvalid = errors.New("fault: invalid fault")

func invalidFault(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
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

// Fault describes a failure a server injects into the requests it
// matches. Inject it with Injector.Inject.
//
// A fault matches a request by Method and Path; among the faults that
// match, the first injected one that fires shapes the answer (Times and
// Probability decide whether it fires). Faults apply to requests that pass
// authentication. A faulted request is still recorded in the server's
// request log (local.Server.Requests), with
// the status the client saw (0 after a reset before the headers) and the
// fault's text form in Request.Fault.
//
// What a firing fault does, in order:
//
//  1. Latency: the answer waits this long (the request's context and
//     the server's Close end the wait).
//  2. Expire: the session the path names (by session id, or the current
//     session of the sandbox it names) expires as if its timeout had passed,
//     so the real handler answers 410 sandbox_stopped. With AfterHandler the
//     session expires after the real handler ran, so the next call gets the
//     410.
//  3. ExpireToken: the bearer token of the request expires. Every request
//     that carries it from then on, on any path, is refused as hosted
//     Vercel refuses an expired token: 403 forbidden with invalidToken
//     (the answer the client's credential refresh looks for), before any
//     other fault or handler. Without AfterHandler this request is the
//     first one refused; with it, the real answer goes out first.
//  4. The answer. With Status or Body, the server answers with that status
//     and either Body or the API's JSON error envelope
//     {"error":{"code":Code,"message":Message}}, plus a Retry-After header
//     when RetryAfter is set; the real handler does not run, so a command
//     POST that gets a 500 starts nothing. With AfterHandler the real
//     handler runs to its end first (its answer is discarded), so a test can
//     prove that a command ran once while the client saw a 500. Without
//     Status or Body, the real handler answers, shaped by Reset, Cut and
//     Stall.
//
// A fault cannot stage what the API never does. AfterHandler is refused
// (Validate) with an answer the contract defines as "not executed": 429,
// 410, and 422 sandbox_stopping or sandbox_snapshotting. A client is right
// to send such a request again (after resuming the session for 410 and
// 422), so a command would run twice and a test would prove something
// false. Use a 5xx status for an outcome the client cannot know.
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
// Parse and the standalone server's --fault flag take a fault as one
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
//	expire-token      expire the bearer token of the request
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
// Fault.String returns this form, and Parse(f.String()) gives f back.
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
	// randomness (local.Server.Rand), which local.WithSeed makes
	// reproducible.
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
	// ExpireToken expires the bearer token of the request: it is refused
	// from then on (see the Fault doc). The injector remembers the 1,024
	// tokens expired last.
	ExpireToken bool
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
// ErrInvalid, or nil.
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
	case f.ExpireToken && (answers || bodyFault || f.Reset != NoReset):
		return invalidFault("expire-token answers as an expired token is answered; drop the status, body, cut, stall and reset")
	case bodyFault && f.AfterHandler:
		return invalidFault("cut and stall cannot be combined with after-handler")
	case (f.RetryAfter > 0 || f.Code != "" || f.Message != "") && !answers:
		return invalidFault("code, message and retry-after need a status")
	case f.ContentType != "" && f.Body == "":
		return invalidFault("content-type needs a body")
	case f.AfterHandler && !answers && f.Reset == NoReset && !f.Expire && !f.ExpireToken:
		return invalidFault("after-handler needs a status, body, reset, expire or expire-token")
	case !answers && !bodyFault && f.Reset == NoReset && f.Latency == 0 && !f.Expire && !f.ExpireToken:
		return invalidFault("the fault does nothing: set a status, body, reset, cut, stall, latency, expire or expire-token")
	case bodyFault && answers:
		return invalidFault("cut and stall shape the real handler's answer; they cannot be combined with a status or body")
	case f.Cut && f.Reset != NoReset:
		return invalidFault("cut and reset exclude each other")
	case f.AfterHandler && f.Reset == ResetAfterHeaders && !answers:
		return invalidFault("after-handler with reset=after needs a status or body to send before the reset")
	case f.Reset == ResetBeforeHeaders && answers && !f.AfterHandler:
		return invalidFault("reset=before sends no answer; drop the status and body")
	case f.AfterHandler && notExecuted(f.status(), f.errorCode()):
		return invalidFault("after-handler with status %d (%s) contradicts the API contract: "+
			"that answer means the request was not executed, so a client rightly sends it again; "+
			"use a 5xx status to model an outcome the client cannot know", f.status(), f.errorCode())
	}
	return nil
}

// notExecuted reports whether an answer with this status and error code
// means, by the API's contract, that the request was not executed, so
// that a client may send it again: 429 (rate limited, on every endpoint),
// 410 (the session is gone, whatever the code) and 422 sandbox_stopping
// or sandbox_snapshotting (the session is going away). A client resumes
// the sandbox after the last two and re-sends the call, a command start
// included. Such an answer after the real handler ran would stage a
// server that the API never is.
func notExecuted(status int, code string) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusGone:
		return true
	case http.StatusUnprocessableEntity:
		return code == "sandbox_stopping" || code == "sandbox_snapshotting"
	}
	return false
}

// errorCode returns the error code the fault's answer carries: Code, the
// code of a JSON error envelope in Body, or the default of the status.
func (f *Fault) errorCode() string {
	if f.Body != "" {
		var env wire.ErrorBody
		if json.Unmarshal([]byte(f.Body), &env) == nil {
			return env.Error.Code
		}
		return ""
	}
	if f.Code != "" {
		return f.Code
	}
	return defaultCode(f.status())
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

// Matches reports whether f applies to a request for method and path, by
// Method and Path alone (not Times or Probability). The path may have the
// /api prefix.
func (f Fault) Matches(method, path string) bool {
	if f.Method != "" && f.Method != "*" && !strings.EqualFold(f.Method, method) {
		return false
	}
	return matchPath(f.Path, stripAPI(path))
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
