package soak_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// The soak's own test: a soak that counted nothing would pass forever. A
// short run without faults must see no error and no violation; the same
// run with a client whose answers are sabotaged on purpose (a frame
// dropped or doubled, a downloaded byte flipped, a command sent twice)
// must count the damage as the violation it is.
func TestSoakCountsSabotage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local API in a process of its own")
	}
	t.Parallel()
	for _, tc := range []struct {
		name string
		ops  []opKind
		mw   sandbox.Middleware
		want string // the violation to count; "" for none
	}{
		{"Clean", allOps, nil, ""},
		{"DroppedFrame", []opKind{opAttached, opDetached}, editStdoutFrame(func(line []byte) [][]byte { return nil }), "lost"},
		{"DoubledFrame", []opKind{opAttached, opDetached}, editStdoutFrame(func(line []byte) [][]byte { return [][]byte{line, line} }), "duplicated"},
		{"FlippedByte", []opKind{opFiles}, flipDownloadedByte, "checksum"},
		{"CommandSentTwice", []opKind{opAttached, opDetached}, sendCommandTwice, "run-twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := runSoak(t, options{duration: time.Second, workers: 2, seed: 1, ops: tc.ops, middleware: tc.mw})
			if tc.want == "" {
				if n := rep.tl.violationCount(); n > 0 {
					t.Errorf("%d violations without faults:\n%s", n, strings.Join(rep.tl.firstViolations(), "\n"))
				}
				if n := rep.tl.sum("errors."); n > 0 {
					t.Errorf("%d errors without faults (%s):\n%s", n, rep.tl.breakdown("errors."), rep.tl.exampleList())
				}
				if rep.tl.get("commands") == 0 || rep.tl.get("files.checked") == 0 {
					t.Errorf("the run checked nothing: %s", rep.summary())
				}
				return
			}
			if rep.tl.get("violation."+tc.want) == 0 {
				t.Errorf("no %s violation counted: %s", tc.want, rep.summary())
			}
		})
	}
}

// editStdoutFrame returns a middleware that replaces the first stdout
// frame of every NDJSON stream (an attached run, a log stream) with what
// edit returns.
func editStdoutFrame(edit func(line []byte) [][]byte) sandbox.Middleware {
	return func(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
		resp, err := next(req)
		if err != nil || !strings.Contains(resp.Header.Get("Content-Type"), "ndjson") {
			return resp, err
		}
		resp.Body = &frameEditor{br: bufio.NewReader(resp.Body), body: resp.Body, edit: edit}
		return resp, nil
	}
}

// frameEditor edits the first stdout frame of an NDJSON body.
type frameEditor struct {
	br   *bufio.Reader
	body io.Closer
	edit func(line []byte) [][]byte
	done bool
	buf  []byte
	err  error
}

func (f *frameEditor) Read(p []byte) (int, error) {
	for len(f.buf) == 0 && f.err == nil {
		line, err := f.br.ReadBytes('\n')
		f.err = err
		if !f.done && err == nil && bytes.Contains(line, []byte(`"stream":"stdout"`)) {
			f.done = true
			f.buf = bytes.Join(f.edit(line), nil)
			continue
		}
		f.buf = line
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	if len(f.buf) == 0 && n == 0 {
		return 0, f.err
	}
	return n, nil
}

func (f *frameEditor) Close() error { return f.body.Close() }

// flipDownloadedByte flips the first byte of every downloaded file.
func flipDownloadedByte(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
	resp, err := next(req)
	if err != nil || !strings.HasSuffix(req.URL.Path, "/fs/read") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	resp.Body = &flipFirst{ReadCloser: resp.Body}
	return resp, nil
}

type flipFirst struct {
	io.ReadCloser
	done bool
}

func (f *flipFirst) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if n > 0 && !f.done {
		f.done = true
		p[0] ^= 0xff
	}
	return n, err
}

// sendCommandTwice sends every command start once more before the one the
// client sees, as a client that re-sent a start blindly would.
func sendCommandTwice(req *http.Request, next sandbox.RoundTripFunc) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/cmd") && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			again := req.Clone(req.Context())
			again.Body = body
			if resp, err := next(again); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
	return next(req)
}
