package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// recordedRequestHeaders returns the request headers a cassette keeps.
func recordedRequestHeaders() []string { return []string{"Content-Type", "X-Cwd"} }

// recordedResponseHeaders returns the response headers a cassette keeps.
func recordedResponseHeaders() []string {
	return []string{"Content-Type", "Content-Disposition", "Retry-After", "Location", "X-Vercel-Id"}
}

// recorder is the RoundTripper of a recording cassette.
type recorder struct {
	c    *Cassette
	base http.RoundTripper
}

// normPath strips the /api prefix the official base URL adds, so that a
// cassette recorded against https://vercel.com/api replays for a client
// aimed at a server without it, and the other way round.
func normPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/api/"); ok && len(rest) > 1 && rest[0] == 'v' {
		return "/" + rest
	}
	if p == "" {
		return "/"
	}
	return p
}

// requestHead normalises what is known of a request before its body.
// Called with c.mu held.
func (c *Cassette) requestHead(req *http.Request) reqRec {
	n := c.norm
	if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok {
		n.addSecret(strings.TrimSpace(tok))
	}
	rr := reqRec{Method: req.Method}
	rr.Query = n.query(req.URL.Query())
	rr.Path = n.str(normPath(req.URL.Path))
	for _, h := range recordedRequestHeaders() {
		if v := req.Header.Get(h); v != "" {
			if rr.Header == nil {
				rr.Header = map[string]string{}
			}
			rr.Header[strings.ToLower(h)] = n.str(v)
		}
	}
	return rr
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	c := r.c
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrClosed
	}
	c.seq++
	it := &interaction{Seq: c.seq, Request: c.requestHead(req)}
	c.its = append(c.its, it)
	c.mu.Unlock()

	out := req
	if req.Body != nil && req.Body != http.NoBody {
		ct := req.Header.Get("Content-Type")
		out = req.Clone(req.Context())
		body := req.Body
		if isJSONType(ct) {
			b, err := io.ReadAll(io.LimitReader(req.Body, maxJSONBody+1))
			if err != nil {
				req.Body.Close()
				c.finishError(it, err)
				return nil, err
			}
			if len(b) <= maxJSONBody {
				req.Body.Close()
				c.mu.Lock()
				it.Request.Body = smallBody(c.norm, b)
				c.mu.Unlock()
				out.Body = io.NopCloser(bytes.NewReader(b))
				out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
				out.ContentLength = int64(len(b))
				body = nil
			} else {
				body = readCloser{io.MultiReader(bytes.NewReader(b), req.Body), req.Body}
			}
		}
		if body != nil {
			out.Body = c.teeRequestBody(it, body, ct)
			// A body that is being recorded cannot be rewound.
			out.GetBody = nil
		}
	}

	resp, err := r.base.RoundTrip(out)
	if err != nil {
		c.finishError(it, err)
		return nil, err
	}
	c.mu.Lock()
	rr := &respRec{Status: resp.StatusCode}
	for _, h := range slices.Concat(recordedResponseHeaders(), c.cfg.headers) {
		if v := resp.Header.Get(h); v != "" {
			if rr.Header == nil {
				rr.Header = map[string]string{}
			}
			if h == "X-Vercel-Id" {
				v = phRequest
			} else {
				v = c.norm.str(v)
			}
			rr.Header[strings.ToLower(h)] = v
		}
	}
	it.Response = rr
	ct := resp.Header.Get("Content-Type")
	stream := isNDJSONType(ct) && resp.StatusCode/100 == 2
	if stream {
		rr.Stream = &streamRec{}
	}
	c.mu.Unlock()
	resp.Body = &respTee{c: c, it: it, rc: resp.Body, stream: stream, ct: ct, start: time.Now()}
	return resp, nil
}

func (c *Cassette) finishError(it *interaction, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it.Error = c.norm.str(err.Error())
}

// readCloser joins a reader and the closer of the body it reads.
type readCloser struct {
	io.Reader
	io.Closer
}

// smallBody records a JSON request body read whole: as JSON, or as text
// when it is not valid JSON. Called with the cassette's mutex held.
func smallBody(n *normalizer, b []byte) *bodyRec {
	if len(b) == 0 {
		return nil
	}
	if bd, ok := jsonBody(n, b); ok {
		return bd
	}
	return storeBody(n, b, "text/plain")
}

// teeRequestBody returns a body that passes rc through unchanged while a
// goroutine summarises the bytes (hash, archive entries) from a pipe. The
// goroutine ends when the body is read to its end or closed.
func (c *Cassette) teeRequestBody(it *interaction, rc io.ReadCloser, ct string) io.ReadCloser {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	c.mu.Lock()
	c.pend = append(c.pend, done)
	store := c.cfg.store
	c.mu.Unlock()
	go func() {
		defer close(done)
		bd := summarize(pr, ct, store)
		pr.Close()
		c.mu.Lock()
		for i := range bd.Tar {
			bd.Tar[i].Name = c.norm.str(bd.Tar[i].Name)
			bd.Tar[i].Link = c.norm.str(bd.Tar[i].Link)
		}
		it.Request.Body = nilIfEmpty(bd)
		c.mu.Unlock()
	}()
	return &reqTee{rc: rc, pw: pw}
}

// reqTee copies what the transport reads from a request body into a pipe.
type reqTee struct {
	rc   io.ReadCloser
	pw   *io.PipeWriter
	once sync.Once
	dead bool // the pipe's reader stopped; no more copies
}

// errBodyClosed marks a request body closed before its end.
var errBodyClosed = errors.New("request body closed before its end")

func (t *reqTee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 && !t.dead {
		if _, werr := t.pw.Write(p[:n]); werr != nil {
			t.dead = true
		}
	}
	if errors.Is(err, io.EOF) {
		t.once.Do(func() { t.pw.Close() })
	} else if err != nil {
		t.once.Do(func() { t.pw.CloseWithError(err) })
	}
	return n, err
}

func (t *reqTee) Close() error {
	t.once.Do(func() { t.pw.CloseWithError(errBodyClosed) })
	return t.rc.Close()
}

// respTee passes a response body through to the caller as it arrives and
// records it: frame by frame for a stream, whole otherwise. The
// interaction is complete when the body ends or is closed.
type respTee struct {
	c      *Cassette
	it     *interaction
	rc     io.ReadCloser
	stream bool
	ct     string
	start  time.Time

	mu      sync.Mutex
	done    bool
	buf     bytes.Buffer // whole body (not a stream), up to maxStoredBody
	size    int64
	partial []byte // stream: the line being read
	// output redacts the stdout and stderr frames of a stream, by name.
	output map[string]*outputRedactor
}

// outputRedactor redacts one output stream (stdout or stderr) of a
// recorded stream across its frames. A command that writes a secret in two
// writes sends it in two frames, half in each, where no frame alone shows
// it; so the data of each frame goes through one redact.Writer for the
// whole output stream. What the Writer holds back, because it may begin a
// secret, is recorded with the stream's next frame, or added to its last
// one when the stream ends. The caller reads every frame as it came.
type outputRedactor struct {
	w    *redact.Writer
	out  bytes.Buffer   // what w passed on and no frame holds yet
	last int            // index in frames of the stream's last frame
	obj  map[string]any // that frame, normalised, without its data
	data string         // the data recorded in it, before normalisation
}

// outputNames are the output streams of a stream's frames, in the order
// their held back data is recorded when the stream ends.
func outputNames() []string { return []string{"stdout", "stderr"} }

// outputFrame returns the output stream and data of a frame
// {"stream":"stdout"|"stderr","data":"…"}.
func outputFrame(v any) (m map[string]any, name, data string, ok bool) {
	m, _ = v.(map[string]any)
	name, _ = m["stream"].(string)
	data, ok = m["data"].(string)
	return m, name, data, ok && slices.Contains(outputNames(), name)
}

func (t *respTee) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return n, err
	}
	if n > 0 {
		t.take(p[:n])
	}
	switch {
	case errors.Is(err, io.EOF):
		t.finish(endEOF, nil)
	case err != nil:
		t.finish(endError, err)
	}
	return n, err
}

// take records bytes read. Called with t.mu held.
func (t *respTee) take(b []byte) {
	if !t.stream {
		t.size += int64(len(b))
		if t.buf.Len() <= maxStoredBody {
			t.buf.Write(b)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.partial = append(t.partial, b...)
			return
		}
		t.partial = append(t.partial, b[:i]...)
		t.frame(t.partial, false)
		t.partial = t.partial[:0]
		b = b[i+1:]
	}
}

// frame records one line of a stream. Called with t.mu held.
func (t *respTee) frame(l []byte, noEOL bool) {
	c := t.c
	at := time.Since(t.start).Milliseconds()
	c.mu.Lock()
	defer c.mu.Unlock()
	f := frameRec{Seq: t.it.Seq, Frame: len(t.it.frames) + 1, At: c.norm.floor(at), NoEOL: noEOL}
	if v, err := decodeJSON(l); err == nil && len(bytes.TrimSpace(l)) > 0 {
		if m, name, data, ok := outputFrame(v); ok {
			f.JSON = t.outputData(m, name, data)
		} else {
			f.JSON = canonical(c.norm.json(v, ""))
		}
	} else {
		s := c.norm.str(string(l))
		f.Text = &s
	}
	t.it.frames = append(t.it.frames, f)
	t.it.Response.Stream.Frames = len(t.it.frames)
}

// outputData records the data of an output frame m of stream name, which
// is to be frame len(frames), through the stream's redactor, and returns
// the frame's JSON. Called with t.mu and c.mu held.
func (t *respTee) outputData(m map[string]any, name, data string) json.RawMessage {
	n := t.c.norm
	o := t.output[name]
	if o == nil {
		if t.output == nil {
			t.output = map[string]*outputRedactor{}
		}
		o = &outputRedactor{}
		o.w = redact.NewWriter(&o.out, redact.NewSet(n.secrets...))
		t.output[name] = o
	}
	_, _ = o.w.Write([]byte(data)) // a bytes.Buffer does not fail
	delete(m, "data")
	o.obj = n.json(m, "").(map[string]any)
	o.data = o.out.String()
	o.out.Reset()
	o.last = len(t.it.frames)
	o.obj["data"] = n.output(o.data)
	return canonical(o.obj)
}

// flushOutput records what the output redactors held back with the last
// frame of their stream. Called with t.mu and c.mu held.
func (t *respTee) flushOutput() {
	for _, name := range outputNames() {
		o := t.output[name]
		if o == nil {
			continue
		}
		_ = o.w.Close()
		if o.out.Len() == 0 {
			continue
		}
		o.data += o.out.String()
		o.out.Reset()
		o.obj["data"] = t.c.norm.output(o.data)
		t.it.frames[o.last].JSON = canonical(o.obj)
	}
}

// finish completes the interaction. Called with t.mu held.
func (t *respTee) finish(end string, err error) {
	t.done = true
	if t.stream {
		if len(t.partial) > 0 {
			t.frame(t.partial, true)
			t.partial = nil
		}
		c := t.c
		c.mu.Lock()
		defer c.mu.Unlock()
		t.flushOutput()
		s := t.it.Response.Stream
		s.End = end
		if err != nil {
			s.Error = c.norm.str(err.Error())
		}
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	b := t.buf.Bytes()
	switch {
	case err != nil || t.size > maxStoredBody || end == endClosed:
		size := t.size
		bd := &bodyRec{Size: &size, Truncated: true}
		if err != nil {
			t.it.Error = c.norm.str("reading response body: " + err.Error())
		}
		t.it.Response.Body = bd
	case len(b) == 0:
	case isJSONType(t.ct) || t.ct == "":
		if v, err := decodeJSON(b); err == nil {
			c.learnGenerated(t.it, v)
			t.it.Response.Body = &bodyRec{JSON: canonical(c.norm.json(v, ""))}
			break
		}
		t.it.Response.Body = storeBody(c.norm, b, "text/plain")
	default:
		t.it.Response.Body = storeBody(c.norm, b, t.ct)
	}
}

// learnGenerated handles names the server generated: when a create or
// fork request named no sandbox, the name in the answer (v, not normalised
// yet) is volatile. Called with c.mu held.
func (c *Cassette) learnGenerated(it *interaction, v any) {
	rq := it.Request
	if rq.Method != http.MethodPost || !(isCreatePath(rq.Path) || strings.HasSuffix(rq.Path, "/fork")) {
		return
	}
	if rq.Body != nil && rq.Body.JSON != nil {
		if v, err := decodeJSON(rq.Body.JSON); err == nil {
			if m, ok := v.(map[string]any); ok {
				if _, named := m["name"]; named {
					return
				}
			}
		}
	}
	m, _ := v.(map[string]any)
	sb, _ := m["sandbox"].(map[string]any)
	name, _ := sb["name"].(string)
	if name == "" || strings.Contains(name, "{{") {
		return
	}
	c.norm.placeholder("name", name)
}

func isCreatePath(p string) bool {
	switch p {
	case "/v1/sandboxes", "/v2/sandboxes", "/v3/sandboxes":
		return true
	}
	return false
}

func (t *respTee) Close() error {
	t.mu.Lock()
	if !t.done && !t.stream && (isJSONType(t.ct) || t.ct == "") {
		// Read the rest so that the whole body is recorded (a JSON decoder
		// may stop before EOF). Other bodies (file downloads) closed early
		// are recorded as cut.
		t.mu.Unlock()
		var err error
		over := false
		buf := make([]byte, 32<<10)
		for err == nil && !over {
			var n int
			n, err = t.rc.Read(buf)
			t.mu.Lock()
			if !t.done && n > 0 {
				t.take(buf[:n])
			}
			over = t.size > maxStoredBody
			t.mu.Unlock()
		}
		t.mu.Lock()
		switch {
		case t.done:
		case errors.Is(err, io.EOF):
			t.finish(endEOF, nil)
		case over:
			t.finish(endClosed, nil)
		default:
			t.finish(endError, err)
		}
	}
	if !t.done && t.stream {
		t.mu.Unlock()
		t.peekEnd()
		t.mu.Lock()
	}
	if !t.done {
		t.finish(endClosed, nil)
	}
	t.mu.Unlock()
	return t.rc.Close()
}

// endGrace is how long Close waits for the end of a stream that the
// client closed after its last frame, to tell a stream that was over
// (recorded as "eof") from one that was still open ("closed").
const endGrace = 500 * time.Millisecond

// peekEnd reads what follows in a stream the client closes, for at most
// endGrace: an end of file (perhaps after frames the client did not wait
// for) completes the recording as "eof". It leaves t unfinished otherwise.
func (t *respTee) peekEnd() {
	type result struct {
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		buf := make([]byte, 32<<10)
		var got []byte
		for {
			n, err := t.rc.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				ch <- result{got, err}
				return
			}
		}
	}()
	timer := time.NewTimer(endGrace)
	defer timer.Stop()
	select {
	case r := <-ch:
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.done && errors.Is(r.err, io.EOF) {
			t.take(r.data)
			t.finish(endEOF, nil)
		}
	case <-timer.C:
		// Still open: closing the body ends the read.
		t.rc.Close()
		<-ch
	}
}
