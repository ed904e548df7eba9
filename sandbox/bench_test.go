package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"golang.org/x/sync/errgroup"
)

// benchLines is how many output lines (one NDJSON frame each) the log
// streaming benchmarks consume per iteration.
const benchLines = 100_000

var benchLine = []byte("the quick brown fox jumps over the lazy dog 0123456789\n")

func linesHandler() sandboxtest.Handler {
	return sandboxtest.HandlerFunc(func(ctx context.Context, cmd *sandboxtest.Cmd, _ <-chan int) int {
		n, _ := strconv.Atoi(cmd.Args[0])
		for i := 0; i < n; i++ {
			if _, err := cmd.Stdout.Write(benchLine); err != nil || ctx.Err() != nil {
				return 1
			}
		}
		return 0
	})
}

func benchServer(b *testing.B) (*sandboxtest.Server, *sandbox.Client, *sandbox.Sandbox) {
	b.Helper()
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("lines"), linesHandler())
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	srv := sandboxtest.NewServer(b, sandboxtest.WithExecutor(script))
	c := srv.Client()
	sb, err := c.Create(context.Background(), sandbox.CreateParams{})
	if err != nil {
		b.Fatal(err)
	}
	return srv, c, sb
}

// BenchmarkLogStream consumes benchLines output lines of an attached run
// through the client, into io.Discard.
func BenchmarkLogStream(b *testing.B) {
	_, _, sb := benchServer(b)
	ctx := context.Background()
	cmd := &command.Cmd{Name: "lines", Args: []string{strconv.Itoa(benchLines)}, Stdout: io.Discard, CaptureLimit: -1}
	b.SetBytes(int64(benchLines * len(benchLine)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := sb.Run(ctx, cmd)
		if err != nil {
			b.Fatal(err)
		}
		if res.StdoutBytes != int64(benchLines*len(benchLine)) {
			b.Fatalf("got %d bytes", res.StdoutBytes)
		}
	}
	b.ReportMetric(float64(b.N*benchLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkLogStreamRaw is the baseline: the same request and stream
// decoded with net/http, bufio and encoding/json alone.
func BenchmarkLogStreamRaw(b *testing.B) {
	srv, _, sb := benchServer(b)
	body := fmt.Sprintf(`{"command":"lines","args":["%d"],"env":{},"sudo":false,"wait":true,"logs":true}`, benchLines)
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/cmd?teamId=" + sandboxtest.TeamID
	hc := &http.Client{}
	b.SetBytes(int64(benchLines * len(benchLine)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		total := rawLogBytes(b, resp.Body)
		resp.Body.Close()
		if total != benchLines*len(benchLine) {
			b.Fatalf("got %d bytes", total)
		}
	}
	b.ReportMetric(float64(b.N*benchLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkRunTrue is the per-call overhead of an attached run of a
// command that prints nothing.
func BenchmarkRunTrue(b *testing.B) {
	_, _, sb := benchServer(b)
	ctx := context.Background()
	cmd := &command.Cmd{Name: "true"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := sb.Run(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunTrueRaw is the baseline for BenchmarkRunTrue: the same
// exchange with net/http and encoding/json alone.
func BenchmarkRunTrueRaw(b *testing.B) {
	srv, _, sb := benchServer(b)
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/cmd?teamId=" + sandboxtest.TeamID
	body := `{"command":"true","args":[],"env":{},"sudo":false,"wait":true,"logs":true}`
	hc := &http.Client{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		dec := json.NewDecoder(resp.Body)
		for {
			var f map[string]any
			if err := dec.Decode(&f); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
}

// BenchmarkWriteFiles uploads 64 MiB through the client to a handler that
// discards the body: the client's cost of a streamed tar.gz upload.
func BenchmarkWriteFiles(b *testing.B) {
	for _, lvl := range []struct {
		name  string
		level int
	}{{"BestSpeed", 1}, {"Default", -1}, {"NoCompression", 0}} {
		b.Run(lvl.name, func(b *testing.B) {
			srv, _, sb := benchServer(b)
			_ = srv
			const size = 64 << 20
			data := pseudoText(size)
			ctx := context.Background()
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				err := sb.WriteFiles(ctx, []files.Entry{files.FromBytes("big.txt", data)}, files.WithLevel(lvl.level))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// pseudoText is compressible but not trivially so: words from a small
// vocabulary chosen by a linear congruential generator.
func pseudoText(n int) []byte {
	words := []string{"sandbox", "vercel", "go ", "command", "stream", "file", "42", "\n", "error", "retry "}
	out := make([]byte, 0, n)
	x := uint32(1)
	for len(out) < n {
		x = x*1664525 + 1013904223
		out = append(out, words[x>>28%uint32(len(words))]...)
		out = append(out, ' ')
	}
	return out[:n]
}

// decodeLines is the number of frames in the prebuilt log body of
// BenchmarkLogDecode.
const decodeLines = 1_000_000

// logBodyServer serves a prebuilt NDJSON log of decodeLines frames, and a
// finished command, so the benchmarks measure the client alone.
func logBodyServer(b *testing.B) (string, int) {
	b.Helper()
	var body bytes.Buffer
	payload := 0
	for i := 0; i < decodeLines; i++ {
		line := fmt.Sprintf("line %d of the benchmark output\\n", i)
		payload += len(line) - 1 // the escaped newline is one byte of data
		fmt.Fprintf(&body, `{"stream":"stdout","data":"%s"}`+"\n", line)
	}
	data := body.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/logs") {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Write(data)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"command":{"id":"cmd_1","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":0,"startedAt":1}}`)
	}))
	b.Cleanup(srv.Close)
	return srv.URL, payload
}

// BenchmarkLogDecode reads decodeLines log frames through
// command.Handle.Logs over loopback.
func BenchmarkLogDecode(b *testing.B) {
	url, payload := logBodyServer(b)
	c, err := sandbox.NewClient(sandbox.WithBaseURL(url), sandbox.WithToken("t", "team", "prj"))
	if err != nil {
		b.Fatal(err)
	}
	h, err := c.Attach(command.Ref{SessionID: "sbx_1", CommandID: "cmd_1"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(payload))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		for ev, err := range h.Logs(ctx) {
			if err != nil {
				b.Fatal(err)
			}
			n += len(ev.Data)
		}
		if n != payload {
			b.Fatalf("got %d bytes, want %d", n, payload)
		}
	}
	b.ReportMetric(float64(b.N*decodeLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkLogDecodeRaw is the baseline: the same body read with net/http,
// bufio and encoding/json alone.
func BenchmarkLogDecodeRaw(b *testing.B) {
	url, payload := logBodyServer(b)
	b.SetBytes(int64(payload))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := http.Get(url + "/v2/sandboxes/sessions/sbx_1/cmd/cmd_1/logs")
		if err != nil {
			b.Fatal(err)
		}
		n := rawLogBytes(b, resp.Body)
		resp.Body.Close()
		if n != payload {
			b.Fatalf("got %d bytes, want %d", n, payload)
		}
	}
	b.ReportMetric(float64(b.N*decodeLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkConcurrentSandboxes runs 5 commands in each of 50 sandboxes at
// once through one client, and reports how many connections it opened.
func BenchmarkConcurrentSandboxes(b *testing.B) {
	const sandboxes, perSandbox = 50, 5
	script := sandboxtest.NewScript()
	script.Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	srv, err := sandboxtest.New(sandboxtest.WithExecutor(script))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	c, err := sandbox.NewClient(sandbox.WithBaseURL(ts.URL), sandbox.WithToken(srv.Token(), "team", "prj"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var g errgroup.Group
		for s := 0; s < sandboxes; s++ {
			g.Go(func() error {
				sb, err := c.Create(ctx, sandbox.CreateParams{})
				if err != nil {
					return err
				}
				for k := 0; k < perSandbox; k++ {
					if _, err := sb.Run(ctx, sandbox.Command("true")); err != nil {
						return err
					}
				}
				_, err = sb.Stop(ctx)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/op")
	b.ReportMetric(float64(b.N*sandboxes*(perSandbox+2))/b.Elapsed().Seconds(), "calls/s")
}

// rawLogBytes is the baseline decoder: bufio and encoding/json alone. It
// returns the bytes of log data in an NDJSON body of short lines.
func rawLogBytes(b *testing.B, r io.Reader) int {
	br := bufio.NewReaderSize(r, 64<<10)
	total := 0
	for {
		line, err := br.ReadSlice('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var f struct {
				Stream string `json:"stream"`
				Data   string `json:"data"`
			}
			if err := json.Unmarshal(line, &f); err != nil {
				b.Fatal(err)
			}
			total += len(f.Data)
		}
		if err != nil {
			return total
		}
	}
}
