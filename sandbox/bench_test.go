package sandbox_test

import (
	"bufio"
	"bytes"
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
	"time"

	"github.com/klauspost/compress/gzip"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/internal/benchdata"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/otelsandbox"
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

// benchLogStream runs read, which consumes the output of an attached run
// of benchLines lines and returns the bytes of output it got (or, for a
// copy, of body), as a benchmark of that many lines an iteration.
func benchLogStream(b *testing.B, read func() int) {
	want := benchLines * len(benchLine)
	b.SetBytes(int64(want))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := read(); n < want {
			b.Fatalf("got %d bytes, want %d", n, want)
		}
	}
	b.ReportMetric(float64(b.N*benchLines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkLogStream consumes benchLines output lines of an attached run
// through the client, into io.Discard.
func BenchmarkLogStream(b *testing.B) {
	_, _, sb := benchServer(b)
	ctx := context.Background()
	benchLogStream(b, func() int {
		cmd := sb.Command("lines", strconv.Itoa(benchLines)) // a Cmd runs once
		cmd.Stdout = io.Discard
		cmd.CaptureLimit = -1
		res, err := cmd.Run(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return int(res.StdoutBytes)
	})
}

// rawPost returns a function that posts body to path (below the session of
// sb) with net/http alone and returns the answer.
func rawPost(b *testing.B, srv *sandboxtest.Server, sb *sandbox.Sandbox, path, body string) func() *http.Response {
	return rawPostTo(b, srv.URL(), srv.Token(), sb, path, body)
}

// rawPostTo is rawPost to a server at base that accepts token.
func rawPostTo(b *testing.B, base, token string, sb *sandbox.Sandbox, path, body string) func() *http.Response {
	url := base + "/v2/sandboxes/sessions/" + sb.SessionID() + path + "?teamId=" + local.TeamID
	hc := &http.Client{}
	return func() *http.Response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
}

// rawRun returns a function that posts an attached run of command with
// args, with its logs, through rawPost.
func rawRun(b *testing.B, base, token string, sb *sandbox.Sandbox, command string, args ...string) func() *http.Response {
	wireArgs, _ := json.Marshal(append([]string{}, args...))
	return rawPostTo(b, base, token, sb, "/cmd", fmt.Sprintf(`{"command":%q,"args":%s,"env":{},"sudo":false,"wait":true,"logs":true}`, command, wireArgs))
}

// BenchmarkLogStreamRaw is a peer: the same request and stream decoded with
// net/http, bufio and encoding/json alone.
func BenchmarkLogStreamRaw(b *testing.B) {
	benchRawLogStream(b, func(r io.Reader) int { return rawLogBytes(b, r) })
}

// BenchmarkLogStreamCopy is the bound for BenchmarkLogStream: the same
// request, its NDJSON answer copied to io.Discard without decoding.
func BenchmarkLogStreamCopy(b *testing.B) {
	benchRawLogStream(b, func(r io.Reader) int { return discardAll(b, r) })
}

// benchRawLogStream posts the run of BenchmarkLogStream with net/http alone
// and reads the answer with read.
func benchRawLogStream(b *testing.B, read func(io.Reader) int) {
	srv, _, sb := benchServer(b)
	run := rawRun(b, srv.URL(), srv.Token(), sb, "lines", strconv.Itoa(benchLines))
	benchLogStream(b, func() int {
		resp := run()
		defer resp.Body.Close()
		return read(resp.Body)
	})
}

// BenchmarkRunTrue is the per-call overhead of an attached run of a
// command that prints nothing. It reports the connections the server saw
// opened in all.
func BenchmarkRunTrue(b *testing.B) {
	cs := countedSandbox(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchdata.CPUTime()
	for i := 0; i < b.N; i++ {
		if _, err := cs.sb.Command("true").Run(ctx); err != nil { // a Cmd runs once
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(cs.conns.Load()), "conns")
}

// BenchmarkRunTrueTelemetry is BenchmarkRunTrue without telemetry (off),
// with package otelsandbox on no-op providers (noop), and with the
// OpenTelemetry SDK sampling every span into an exporter that drops them
// and a manual metric reader (sdk): the cost of the spans (a command span
// and its HTTP span), their attributes and the metrics.
func BenchmarkRunTrueTelemetry(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	for _, v := range []struct {
		name string
		opts []sandbox.Option
	}{
		{"off", nil},
		{"noop", []sandbox.Option{otelsandbox.WithTelemetry(otelsandbox.WithTracerProvider(tracenoop.NewTracerProvider()),
			otelsandbox.WithMeterProvider(metricnoop.NewMeterProvider()))}},
		{"sdk", []sandbox.Option{otelsandbox.WithTelemetry(otelsandbox.WithTracerProvider(tp), otelsandbox.WithMeterProvider(mp))}},
	} {
		b.Run(v.name, func(b *testing.B) {
			cs := countedSandbox(b, v.opts...)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchdata.CPUTime()
			for i := 0; i < b.N; i++ {
				if _, err := cs.sb.Command("true").Run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU reports the CPU time per operation since cpu, client and
// server together: wall time on a busy machine also counts the waits.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64((benchdata.CPUTime()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkRunTrueRaw is the baseline for BenchmarkRunTrue: the same
// exchange with net/http and encoding/json alone, each answer read to its
// end.
func BenchmarkRunTrueRaw(b *testing.B) {
	cs := countedSandbox(b)
	run := rawRun(b, cs.url, cs.token, cs.sb, "true")
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchdata.CPUTime()
	for i := 0; i < b.N; i++ {
		resp := run()
		dec := json.NewDecoder(resp.Body)
		for {
			var f map[string]any
			if err := dec.Decode(&f); err != nil {
				break
			}
		}
		resp.Body.Close()
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(cs.conns.Load()), "conns")
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
	ts := httptest.NewServer(uploadDiscarder(srv.Handler(), everyRequest, received))
	tb.Cleanup(ts.Close)
	c, err := sandbox.NewClient(sandbox.WithBaseURL(ts.URL),
		sandbox.WithToken(srv.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// uploadDiscarder serves fake, except that the file uploads for which
// discard is true are read, counted in received and discarded.
func uploadDiscarder(fake http.Handler, discard func(*http.Request) bool, received *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/fs/write") || !discard(r) {
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
	})
}

// everyRequest selects every request.
func everyRequest(*http.Request) bool { return true }

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
					if err := sb.FS().WriteFiles(ctx, entries, atLevel(l.level)); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(received.Load())/float64(b.N)/uploadSize*100, "%wire")
			})
		}
	}
}

// BenchmarkWriteFilesGzipOnly is the bound for BenchmarkWriteFiles: the
// compressor that uploads use (github.com/klauspost/compress/gzip) alone
// over the same data at the same level, in 64 KiB writes to io.Discard,
// with no tar, HTTP or server.
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
				err := sb.FS().WriteFiles(ctx, []files.Entry{files.FromReader("big.bin", newGenReader(size), size)}, atLevel(l.level))
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

// logBody is a prebuilt NDJSON log in hosted Vercel's frame order (data
// first) and the bytes of log data it carries.
type logBody struct {
	name    string
	frames  int
	payload int
	data    []byte
}

// logBodies are the bodies of the log decoding benchmarks: a million
// one-line frames, and 4,096 frames of 16 KiB (64 MiB of data each way).
var logBodies = sync.OnceValue(func() []logBody {
	line := logBody{name: "line", frames: 1_000_000}
	var body bytes.Buffer
	for i := 0; i < line.frames; i++ {
		data := fmt.Sprintf("line %d of the benchmark output\\n", i)
		line.payload += len(data) - 1 // the escaped newline is one byte of data
		fmt.Fprintf(&body, `{"data":"%s","stream":"stdout"}`+"\n", data)
	}
	line.data = body.Bytes()

	big := logBody{name: "16KiB", frames: 4096}
	chunk := strings.Repeat("0123456789abcdef", 1<<10)
	var bigBody bytes.Buffer
	for i := 0; i < big.frames; i++ {
		big.payload += len(chunk)
		fmt.Fprintf(&bigBody, `{"data":"%s","stream":"stdout"}`+"\n", chunk)
	}
	big.data = bigBody.Bytes()
	return []logBody{line, big}
})

// logBodyServer serves body as the log of a command, and the command as
// finished, so the benchmarks measure the client alone.
func logBodyServer(b *testing.B, body logBody) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/logs") {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.Write(body.data)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"command":{"id":"cmd_1","name":"x","args":[],"cwd":"/","sessionId":"sbx_1","exitCode":0,"startedAt":1}}`)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchLogBodies runs a benchmark for each log body, with the body's data as
// the bytes of an iteration. setup returns what one iteration does: read
// the log and return how many bytes of log data, or of body for a copy, it
// read.
func benchLogBodies(b *testing.B, setup func(b *testing.B, url string) func() int) {
	for _, body := range logBodies() {
		b.Run(body.name, func(b *testing.B) {
			read := setup(b, logBodyServer(b, body))
			b.SetBytes(int64(body.payload))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if n := read(); n != body.payload && n != len(body.data) {
					b.Fatalf("got %d bytes, want %d", n, body.payload)
				}
			}
			b.ReportMetric(float64(b.N*body.frames)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// logsURL is the path of the log of the command logBodyServer serves.
const logsURL = "/v2/sandboxes/sessions/sbx_1/cmd/cmd_1/logs"

// BenchmarkLogDecode reads log frames in hosted Vercel's frame order through
// command.Handle.Logs over loopback. Compare with BenchmarkLogDecodeCopy.
func BenchmarkLogDecode(b *testing.B) {
	ctx := context.Background()
	benchLogBodies(b, func(b *testing.B, url string) func() int {
		c, err := sandbox.NewClient(sandbox.WithBaseURL(url), sandbox.WithToken("t"), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		if err != nil {
			b.Fatal(err)
		}
		h, err := c.Attach(command.Ref{SessionID: "sbx_1", CommandID: "cmd_1"})
		if err != nil {
			b.Fatal(err)
		}
		return func() int {
			n := 0
			for ev, err := range h.Logs(ctx) {
				if err != nil {
					b.Fatal(err)
				}
				n += len(ev.Data)
			}
			return n
		}
	})
}

// BenchmarkLogDecodeRaw is a peer: the same body read with net/http, bufio
// and encoding/json alone.
func BenchmarkLogDecodeRaw(b *testing.B) {
	benchLogBodies(b, func(b *testing.B, url string) func() int {
		return func() int { return getLog(b, url, func(r io.Reader) int { return rawLogBytes(b, r) }) }
	})
}

// BenchmarkLogDecodeCopy is the bound for BenchmarkLogDecode: the same
// HTTP body over loopback, copied to io.Discard without decoding. Its
// throughput counts the log data, as the decoders' does.
func BenchmarkLogDecodeCopy(b *testing.B) {
	benchLogBodies(b, func(b *testing.B, url string) func() int {
		return func() int { return getLog(b, url, func(r io.Reader) int { return discardAll(b, r) }) }
	})
}

// getLog gets the log that logBodyServer serves at url with net/http
// alone, and returns what read returns for its body.
func getLog(b *testing.B, url string, read func(io.Reader) int) int {
	resp, err := http.Get(url + logsURL)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	return read(resp.Body)
}

// discardAll copies r to io.Discard and returns how many bytes it copied.
func discardAll(b *testing.B, r io.Reader) int {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		b.Fatal(err)
	}
	return int(n)
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
				Data   string `json:"data"`
				Stream string `json:"stream"`
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
