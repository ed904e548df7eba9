package sandbox_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// benchLines is how many output lines (one NDJSON frame each) the log
// streaming benchmarks consume per iteration.
const benchLines = 100_000

var benchLine = []byte("the quick brown fox jumps over the lazy dog 0123456789\n")

func linesHandler() sandboxtest.Handler {
	return sandboxtest.HandlerFunc(func(ctx context.Context, cmd *local.Cmd, _ <-chan int) int {
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
	srv := sandboxtest.NewServer(b, local.WithExecutor(script))
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
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/cmd?teamId=" + local.TeamID
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
	url := srv.URL() + "/v2/sandboxes/sessions/" + sb.SessionID() + "/cmd?teamId=" + local.TeamID
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

// uploadSize is the content size of the 64 MiB upload benchmarks.
const uploadSize = 64 << 20

// uploadData returns 64 MiB of text-like content and 64 MiB of
// incompressible random bytes, the same as the files package benchmarks.
var uploadData = sync.OnceValues(func() (text, random []byte) {
	return benchdata.Text(uploadSize), benchdata.Random(uploadSize)
})

var uploadLevels = []struct {
	name  string
	level int
}{
	{"BestSpeed", gzip.BestSpeed},
	{"Default", gzip.DefaultCompression},
	{"NoCompression", gzip.NoCompression},
}

// discardingClient returns a client of a fake whose file uploads are read
// and discarded without being extracted, so that upload benchmarks measure
// the client (tar, gzip, HTTP) and not the fake's disk. It counts the
// archive bytes received.
func discardingClient(tb testing.TB, received *atomic.Int64) *sandbox.Client {
	tb.Helper()
	srv, err := local.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	fake := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/fs/write") {
			fake.ServeHTTP(w, r)
			return
		}
		n, err := io.Copy(io.Discard, r.Body)
		received.Add(n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	}))
	tb.Cleanup(ts.Close)
	c, err := sandbox.NewClient(sandbox.WithBaseURL(ts.URL),
		sandbox.WithToken(srv.Token(), local.TeamID, local.ProjectID))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// BenchmarkWriteFiles uploads 64 MiB in one file through WriteFiles at
// each compression level, text and random data, to a server that discards
// the archive. Compare with BenchmarkWriteFilesGzipOnly.
func BenchmarkWriteFiles(b *testing.B) {
	text, random := uploadData()
	for _, d := range []struct {
		name string
		data []byte
	}{{"text", text}, {"random", random}} {
		for _, l := range uploadLevels {
			b.Run(d.name+"/"+l.name, func(b *testing.B) {
				var received atomic.Int64
				c := discardingClient(b, &received)
				ctx := context.Background()
				sb, err := c.Create(ctx, sandbox.CreateParams{})
				if err != nil {
					b.Fatal(err)
				}
				entries := []files.Entry{files.FromBytes("big.bin", d.data)}
				b.SetBytes(uploadSize)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := sb.WriteFiles(ctx, entries, files.WithLevel(l.level)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(received.Load())/float64(b.N)/uploadSize*100, "%wire")
			})
		}
	}
}

// BenchmarkWriteFilesGzipOnly is the floor for BenchmarkWriteFiles:
// compress/gzip alone over the same data at the same level, in 64 KiB
// writes to io.Discard, with no tar, HTTP or server.
func BenchmarkWriteFilesGzipOnly(b *testing.B) {
	text, random := uploadData()
	for _, d := range []struct {
		name string
		data []byte
	}{{"text", text}, {"random", random}} {
		for _, l := range uploadLevels {
			b.Run(d.name+"/"+l.name, func(b *testing.B) {
				var out countWriter
				b.SetBytes(uploadSize)
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					zw, err := gzip.NewWriterLevel(&out, l.level)
					if err != nil {
						b.Fatal(err)
					}
					for off := 0; off < len(d.data); off += 64 << 10 {
						if _, err := zw.Write(d.data[off : off+64<<10]); err != nil {
							b.Fatal(err)
						}
					}
					if err := zw.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out)/float64(b.N)/uploadSize*100, "%wire")
			})
		}
	}
}

// countWriter discards what it is given and counts the bytes.
type countWriter int64

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

// BenchmarkWriteFiles1GiB uploads 1 GiB of generated incompressible data,
// never held in memory, through WriteFiles to a server that discards it,
// and reports the peak growth of the client's heap during the upload.
func BenchmarkWriteFiles1GiB(b *testing.B) {
	const size = 1 << 30
	for _, l := range []struct {
		name  string
		level int
	}{{"BestSpeed", gzip.BestSpeed}, {"NoCompression", gzip.NoCompression}} {
		b.Run(l.name, func(b *testing.B) {
			var received atomic.Int64
			c := discardingClient(b, &received)
			ctx := context.Background()
			sb, err := c.Create(ctx, sandbox.CreateParams{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			for i := 0; i < b.N; i++ {
				hp := startHeapPeak()
				err := sb.WriteFiles(ctx, []files.Entry{files.FromReader("big.bin", newGenReader(size), size)}, files.WithLevel(l.level))
				peak = max(peak, hp.growth())
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if received.Load() < int64(b.N)*size/2 {
				b.Fatalf("the server received %d bytes", received.Load())
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
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
		// Hosted Vercel writes data first.
		fmt.Fprintf(&body, `{"data":"%s","stream":"stdout"}`+"\n", line)
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
