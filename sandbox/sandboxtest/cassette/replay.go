package cassette

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MismatchError reports a request a replay could not answer: no recorded
// interaction that was not used yet matches it. Diff compares it with the
// closest recorded request.
type MismatchError struct {
	Method, Path string
	// Request is the normalised request, as compared.
	Request string
	// Closest is the seq of the closest recorded interaction, 0 if none.
	Closest int
	// ClosestUsed reports that the closest one was answered before.
	ClosestUsed bool
	// Diff is a line diff from the closest recorded request ("-") to this
	// one ("+").
	Diff string
}

// Error returns the request, the closest recorded one and their diff.
func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cassette: no recorded interaction matches %s %s", e.Method, e.Path)
	if e.Closest == 0 {
		b.WriteString(" (the cassette is empty)\n")
		b.WriteString(e.Request)
		return b.String()
	}
	fmt.Fprintf(&b, "\nclosest recorded request: #%d", e.Closest)
	if e.ClosestUsed {
		b.WriteString(" (already answered)")
	}
	b.WriteString("\n--- recorded\n+++ request\n")
	b.WriteString(e.Diff)
	return b.String()
}

// Is reports whether target is ErrNoMatch.
func (e *MismatchError) Is(target error) bool { return target == ErrNoMatch }

// ReplayedError is a transport error that was recorded and is replayed.
type ReplayedError struct{ Msg string }

// Error returns the recorded message.
func (e *ReplayedError) Error() string { return "cassette: recorded error: " + e.Msg }

// answer is a matched interaction with its placeholders expanded.
type answer struct {
	seq    int
	err    string // recorded transport error, if any
	status int
	header http.Header
	body   []byte
	noBody bool // the body was not recorded (too large or cut)
	stream bool
	frames []replayFrame
	end    string
	endErr string
}

type replayFrame struct {
	at   time.Duration
	data []byte
}

// requestBody normalises a request body for matching, the way the
// recorder does.
func (c *Cassette) requestBody(body io.Reader, ct string) (*bodyRec, error) {
	if isJSONType(ct) {
		b, err := io.ReadAll(io.LimitReader(body, maxJSONBody+1))
		if err != nil {
			return nil, err
		}
		if len(b) <= maxJSONBody {
			c.mu.Lock()
			defer c.mu.Unlock()
			return smallBody(c.norm, b), nil
		}
		body = io.MultiReader(bytes.NewReader(b), body)
	}
	bd := summarize(body, ct, false)
	if bd.Truncated {
		return nil, errors.New("cassette: reading request body failed")
	}
	bd.Base64 = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range bd.Tar {
		bd.Tar[i].Name = c.norm.str(bd.Tar[i].Name)
		bd.Tar[i].Link = c.norm.str(bd.Tar[i].Link)
	}
	return nilIfEmpty(bd), nil
}

// match finds the interaction for req, marks it used and expands it.
func (c *Cassette) match(req *http.Request) (*answer, error) {
	// Path and query first, then the body, in the order the recorder
	// normalised them, so that new values are numbered alike.
	c.mu.Lock()
	rr := c.requestHead(req)
	c.mu.Unlock()
	rr.Header = nil
	if req.Body != nil && req.Body != http.NoBody {
		bd, err := c.requestBody(req.Body, req.Header.Get("Content-Type"))
		if err != nil {
			return nil, err
		}
		rr.Body = bd
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	key := rr.render()
	for i, k := range c.keys {
		if !c.used[i] && k == key {
			c.used[i] = true
			return c.expand(c.its[i]), nil
		}
	}
	miss := &MismatchError{Method: req.Method, Path: req.URL.Path, Request: key}
	best, bestCost := -1, 0
	for pass := 0; pass < 2 && best < 0; pass++ {
		for i, k := range c.keys {
			if (pass == 0) == c.used[i] {
				continue
			}
			cost := diffCost(k, key)
			if c.its[i].Request.Method != rr.Method {
				cost += 1000
			}
			if best < 0 || cost < bestCost {
				best, bestCost = i, cost
			}
		}
	}
	if best >= 0 {
		miss.Closest = c.its[best].Seq
		miss.ClosestUsed = c.used[best]
		miss.Diff = lineDiff(c.keys[best], key)
	}
	c.misses = append(c.misses, miss)
	return nil, miss
}

// expand turns a recorded interaction into an answer. Called with c.mu held.
func (c *Cassette) expand(it *interaction) *answer {
	n := c.norm
	a := &answer{seq: it.Seq, err: n.expand(it.Error)}
	if it.Response == nil {
		if a.err == "" {
			a.err = "no response was recorded"
		}
		return a
	}
	r := it.Response
	a.status = r.Status
	a.header = http.Header{}
	for k, v := range r.Header {
		a.header.Set(k, n.expand(v))
	}
	if strings.EqualFold(a.header.Get("X-Vercel-Id"), "cassette-replay") {
		a.header.Set("X-Vercel-Id", "cassette-replay-"+strconv.Itoa(it.Seq))
	}
	if r.Stream != nil {
		a.stream, a.end, a.endErr = true, r.Stream.End, n.expand(r.Stream.Error)
		for _, f := range it.frames {
			var data []byte
			if f.JSON != nil {
				if v, err := decodeJSON(f.JSON); err == nil {
					data = canonical(n.expandJSON(v))
				} else {
					data = bytes.Clone(f.JSON)
				}
			} else if f.Text != nil {
				data = []byte(n.expand(*f.Text))
			}
			if !f.NoEOL {
				data = append(data, '\n')
			}
			a.frames = append(a.frames, replayFrame{at: time.Duration(f.At) * time.Millisecond, data: data})
		}
		return a
	}
	if b := r.Body; b != nil {
		switch {
		case b.JSON != nil:
			if v, err := decodeJSON(b.JSON); err == nil {
				a.body = canonical(n.expandJSON(v))
			} else {
				a.body = bytes.Clone(b.JSON)
			}
		case b.Text != nil:
			a.body = []byte(n.expand(*b.Text))
		case b.Base64 != nil:
			a.body = bytes.Clone(b.Base64)
		case b.Truncated || b.Size != nil:
			a.noBody = true
		}
	}
	return a
}

// replayer is the RoundTripper of a replaying cassette.
type replayer struct{ c *Cassette }

func (r *replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	a, err := r.c.match(req)
	if err != nil {
		return nil, err
	}
	if a.err != "" && a.status == 0 {
		return nil, &ReplayedError{Msg: a.err}
	}
	resp := &http.Response{
		Status:     strconv.Itoa(a.status) + " " + http.StatusText(a.status),
		StatusCode: a.status,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     a.header,
		Request:    req,
	}
	switch {
	case a.stream:
		resp.ContentLength = -1
		resp.Body = &frameReader{a: a, ctx: req.Context(), scale: r.c.cfg.scale, start: time.Now(), closed: make(chan struct{})}
	case a.noBody:
		resp.ContentLength = -1
		resp.Body = io.NopCloser(errReader{fmt.Errorf("cassette: the body of interaction #%d was not recorded", a.seq)})
	case a.err != "":
		resp.ContentLength = -1
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(a.body), errReader{&ReplayedError{Msg: a.err}}))
	default:
		resp.ContentLength = int64(len(a.body))
		resp.Body = io.NopCloser(bytes.NewReader(a.body))
	}
	return resp, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// frameReader plays the frames of a recorded stream, one frame at most
// per Read, at the recorded pace when scale > 0.
type frameReader struct {
	a     *answer
	ctx   context.Context
	scale float64
	start time.Time
	next  int
	cur   []byte

	closeOnce sync.Once
	closed    chan struct{}
}

// wait sleeps until d after start (scaled); it fails when ctx ended or the
// body was closed meanwhile.
func wait(ctx context.Context, closed <-chan struct{}, start time.Time, d time.Duration, scale float64) error {
	if scale > 0 {
		if left := time.Duration(float64(d)*scale) - time.Since(start); left > 0 {
			t := time.NewTimer(left)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			case <-closed:
				return ErrClosed
			}
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return ErrClosed
	default:
		return nil
	}
}

func (f *frameReader) Read(p []byte) (int, error) {
	if len(f.cur) == 0 {
		if f.next >= len(f.a.frames) {
			return 0, f.end()
		}
		fr := f.a.frames[f.next]
		if err := wait(f.ctx, f.closed, f.start, fr.at, f.scale); err != nil {
			return 0, err
		}
		f.next++
		f.cur = fr.data
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	return n, nil
}

// end is what a Read returns after the last frame.
func (f *frameReader) end() error {
	switch f.a.end {
	case endEOF:
		return io.EOF
	case endError:
		return fmt.Errorf("cassette: recorded stream error (%s): %w", f.a.endErr, io.ErrUnexpectedEOF)
	}
	// The recording client closed the stream while it was still open:
	// keep it open until this one does.
	select {
	case <-f.ctx.Done():
		return f.ctx.Err()
	case <-f.closed:
		return ErrClosed
	}
}

func (f *frameReader) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

// Handler returns the replay as an http.Handler, so that any HTTP client
// (the official TypeScript SDK included) can replay the cassette. A
// request that matches nothing gets 500 with a text body holding the diff
// against the closest recorded request; a recorded transport error cuts
// the connection. Paths are accepted with or without the /api prefix.
//
// When recording, Handler is a recording proxy to the URL given with
// WithUpstream (streams are passed on frame by frame); without
// WithUpstream it answers 500 to everything.
func (c *Cassette) Handler() http.Handler {
	if c.mode == Record {
		return c.proxy()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := c.match(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if a.err != "" && a.status == 0 {
			panic(http.ErrAbortHandler)
		}
		for k, v := range a.header {
			w.Header()[k] = v
		}
		// No Date: a replay's times are rebuilt from placeholders, and a
		// Date of the replay's own clock would contradict them (a client
		// judges from it whether a stop came before its call). A replay
		// through Transport has none either.
		if _, ok := a.header["Date"]; !ok {
			w.Header()["Date"] = nil
		}
		if !a.stream {
			if a.noBody || a.err != "" {
				w.WriteHeader(a.status)
				_, _ = w.Write(a.body)
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
			w.WriteHeader(a.status)
			_, _ = w.Write(a.body)
			return
		}
		w.WriteHeader(a.status)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		start := time.Now()
		for _, f := range a.frames {
			if wait(r.Context(), nil, start, f.at, c.cfg.scale) != nil {
				return
			}
			if _, err := w.Write(f.data); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		switch a.end {
		case endEOF:
		case endError:
			panic(http.ErrAbortHandler)
		default:
			<-r.Context().Done()
		}
	})
}

// Server is a replay served over HTTP on a loopback address, like
// httptest.Server.
type Server struct {
	ts *httptest.Server
}

// NewServer starts serving c.Handler on 127.0.0.1. Call Close when done.
func NewServer(c *Cassette) *Server {
	return &Server{ts: httptest.NewServer(c.Handler())}
}

// URL is the base URL to give a client, for example
// sandbox.WithBaseURL(srv.URL()).
func (s *Server) URL() string { return s.ts.URL }

// Close shuts the server down, cutting open streams.
func (s *Server) Close() {
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// proxy is the recording proxy of Handler.
func (c *Cassette) proxy() http.Handler {
	up := c.cfg.upstream
	if up == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "cassette: recording without WithUpstream; nothing to forward to", http.StatusInternalServerError)
		})
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Path, pr.Out.URL.RawPath = normPath(pr.In.URL.Path), ""
			pr.SetURL(up)
		},
		Transport:     c.Transport(nil),
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "cassette: "+err.Error(), http.StatusBadGateway)
		},
	}
}
