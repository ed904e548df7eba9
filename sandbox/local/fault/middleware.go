package fault

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// serveFault answers r as the fault h says; next is the real handler.
func serveFault(srv *local.Server, next http.Handler, w http.ResponseWriter, r *http.Request, h *Handle) {
	f := &h.f
	local.NoteFault(r, h.txt)
	if f.Latency > 0 && !pause(srv, r.Context(), f.Latency) {
		return
	}
	if f.Expire && !f.AfterHandler {
		expireNamed(srv, r.URL.Path)
	}
	if f.ExpireToken && !f.AfterHandler {
		h.in.expireToken(bearer(r), h.txt)
		refuseToken(w)
		return
	}
	if f.AfterHandler {
		// The real handler runs to its end; its answer is discarded.
		dw := &captureWriter{h: http.Header{}}
		next.ServeHTTP(dw, r)
		if f.Expire {
			expireNamed(srv, r.URL.Path)
		}
		if f.ExpireToken {
			h.in.expireToken(bearer(r), h.txt)
		}
		switch {
		case f.status() != 0:
			writeFaultAnswer(w, f)
		case f.Reset == ResetBeforeHeaders:
			resetConn(w, false)
		default:
			// Expire or ExpireToken only: the real answer goes out as it
			// was captured.
			writeCaptured(w, dw.status, dw.h, dw.buf.Bytes())
		}
		return
	}
	switch {
	case f.status() != 0:
		writeFaultAnswer(w, f)
		return
	case f.Reset == ResetBeforeHeaders:
		resetConn(w, false)
		return
	}
	if f.Cut || f.Stall > 0 || f.Reset == ResetAfterHeaders {
		w = &faultWriter{ResponseWriter: w, srv: srv, ctx: r.Context(), f: f, left: f.AfterFrames}
	}
	next.ServeHTTP(w, r)
}

// writeFaultAnswer writes the fault's own answer, and resets the
// connection halfway through its body when asked to.
func writeFaultAnswer(w http.ResponseWriter, f *Fault) {
	body := []byte(f.Body)
	ct := f.ContentType
	if f.Body == "" {
		code, message := f.Code, f.Message
		if code == "" {
			code = defaultCode(f.status())
		}
		if message == "" {
			message = cmp.Or(http.StatusText(f.status()), "Injected fault")
		}
		body, _ = json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: message}})
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
		return "bad_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "conflict"
	case http.StatusGone:
		return "sandbox_stopped"
	case http.StatusUnprocessableEntity:
		return "sandbox_stopping"
	case http.StatusTooManyRequests:
		return "rate_limited"
	case http.StatusInternalServerError:
		return "internal_server_error"
	case http.StatusBadGateway:
		return "bad_gateway"
	case http.StatusServiceUnavailable:
		return "service_unavailable"
	case http.StatusGatewayTimeout:
		return "gateway_timeout"
	}
	return "injected_fault"
}

// pause waits d and reports whether it waited in full; the request's
// context and the server's Close end it early.
func pause(srv *local.Server, ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-srv.Done():
		return false
	}
}

// expireNamed expires the session path p names: the session of
// /v2/sandboxes/sessions/{id}/…, or the current session of
// /v2/sandboxes/{name}/….
func expireNamed(srv *local.Server, p string) {
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
		if sb, ok := srv.Sandbox(segs[2]); ok {
			sid = sb.CurrentSessionID
		}
	}
	if sid != "" {
		_ = srv.ExpireSession(sid)
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
	srv         *local.Server
	ctx         context.Context
	f           *Fault
	left        int  // lines to pass before acting
	acted       bool // the fault has acted
	done        bool // cut or reset: every later write fails
	wroteHeader bool
}

// errFaultCut is what the real handler's writes return after a cut.
var errFaultCut = errors.New("fault: response cut by an injected fault")

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
		pause(w.srv, w.ctx, w.f.Stall)
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

// maxCaptured bounds the answer kept from a handler run under AfterHandler.
const maxCaptured = 8 << 20

// captureWriter takes the answer of a handler run under AfterHandler
// (keeping at most maxCaptured bytes of it).
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
	if d.buf.Len() < maxCaptured {
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
