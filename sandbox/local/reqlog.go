package local

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Request is one HTTP request the server received, as Requests reports it.
// Secrets are redacted as package internal/redact defines them: the values
// of headers, query parameters and JSON keys whose name says secret (the
// Authorization header keeps its scheme), the values of header maps in JSON
// bodies, and token-shaped text in any JSON string.
type Request struct {
	Time     time.Time   // when it arrived, on the server's clock
	Method   string      // HTTP method
	Path     string      // URL path as sent (with /api when the client used it)
	Query    url.Values  // query parameters, teamId and projectId included
	Header   http.Header // request headers, redacted
	Body     []byte      // JSON body (redacted), when the request had one
	BodySize int64       // bytes of body read by the server (all bodies)
	Status   int         // status answered; 0 while the request is in flight
	Fault    string      // injected fault that shaped the answer, in the text form of fault.Parse
}

type reqEntry struct {
	req    Request // immutable after record, except via the atomics below
	size   atomic.Int64
	status atomic.Int32
	fault  atomic.Pointer[string]
}

func (e *reqEntry) setStatus(code int) { e.status.Store(int32(code)) }

// requestLog keeps the most recent requests, at most limit of them: a ring
// once it is full, entries[next] being the oldest.
type requestLog struct {
	mu      sync.Mutex
	limit   int
	entries []*reqEntry
	next    int   // where the next entry goes once the log is full
	dropped int64 // requests no longer kept
}

// record logs r. A JSON body is read into memory (it is small) and put back;
// any other body is counted as the handler reads it.
func (l *requestLog) record(r *http.Request, now time.Time) *reqEntry {
	e := &reqEntry{req: Request{
		Time:   now,
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  redact.Query(r.URL.Query()),
		Header: redact.Header(r.Header),
	}}
	if r.Body != nil && r.Body != http.NoBody {
		if isJSONRequest(r) {
			data, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
			e.size.Store(int64(len(data)))
			if err == nil && len(data) <= maxJSONBody {
				if t := bytes.TrimSpace(data); len(t) > 0 && json.Valid(t) {
					e.req.Body = redactJSON(t)
				}
			}
			r.Body = readCloser{Reader: io.MultiReader(bytes.NewReader(data), r.Body), Closer: r.Body}
		} else {
			r.Body = readCloser{Reader: &countingReader{r: r.Body, n: &e.size}, Closer: r.Body}
		}
	}
	l.mu.Lock()
	if len(l.entries) < l.limit {
		l.entries = append(l.entries, e)
	} else {
		l.entries[l.next] = e
		l.next = (l.next + 1) % len(l.entries)
		l.dropped++
	}
	l.mu.Unlock()
	return e
}

// counts returns the number of requests kept and the number dropped.
func (l *requestLog) counts() (kept int, dropped int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries), l.dropped
}

func (l *requestLog) snapshot() []Request {
	l.mu.Lock()
	entries := append(append([]*reqEntry(nil), l.entries[l.next:]...), l.entries[:l.next]...)
	l.mu.Unlock()
	out := make([]Request, len(entries))
	for i, e := range entries {
		r := e.req
		r.Query = cloneValues(r.Query)
		r.Header = r.Header.Clone()
		r.Body = bytes.Clone(r.Body)
		r.BodySize = e.size.Load()
		r.Status = int(e.status.Load())
		if f := e.fault.Load(); f != nil {
			r.Fault = *f
		}
		out[i] = r
	}
	return out
}

func isJSONRequest(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

type readCloser struct {
	io.Reader
	io.Closer
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func cloneValues(v url.Values) url.Values {
	if v == nil {
		return nil
	}
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// redactJSON hides passwords and header values in a JSON document. On any
// decoding trouble it returns the input unchanged (it was valid JSON).
func redactJSON(data []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return bytes.Clone(data)
	}
	if !redactValue(v) {
		return bytes.Clone(data)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return bytes.Clone(data)
	}
	return out
}

// redactValue redacts v in place and reports whether it changed anything:
// the values of secret-named keys, every header value, and token-shaped
// text in any string.
func redactValue(v any) bool {
	changed := false
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			switch {
			case redact.IsSecretName(k):
				t[k] = redact.Marker
				changed = true
			case k == "headers":
				if m, ok := child.(map[string]any); ok {
					for hk := range m {
						m[hk] = redact.Marker
					}
					changed = changed || len(m) > 0
					continue
				}
				changed = redactValue(child) || changed
			default:
				if str, ok := child.(string); ok {
					if r := hideTokens(str); r != str {
						t[k], changed = r, true
					}
					continue
				}
				changed = redactValue(child) || changed
			}
		}
	case []any:
		for i, child := range t {
			if str, ok := child.(string); ok {
				if r := hideTokens(str); r != str {
					t[i], changed = r, true
				}
				continue
			}
			changed = redactValue(child) || changed
		}
	}
	return changed
}

// hideTokens hides token-shaped secrets in s (a nil Set knows no values).
func hideTokens(s string) string { return (*redact.Set)(nil).String(s) }
