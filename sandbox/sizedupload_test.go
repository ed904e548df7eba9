package sandbox_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// uploadLog records the uploads a proxy in front of the fake received.
type uploadLog struct {
	mu      sync.Mutex
	lengths []int64 // Content-Length, -1 when chunked
	sums    [][32]byte
	sizes   []int64
}

func (l *uploadLog) last() (length, size int64, sum [32]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.lengths) - 1
	return l.lengths[i], l.sizes[i], l.sums[i]
}

func (l *uploadLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lengths)
}

// refusingChunked returns a client behind a proxy that answers a chunked
// upload with status, and records every upload it passes on; failFirst
// answers the first sized upload with a 503 after reading it whole.
func refusingChunked(t *testing.T, e *env, status int, failFirst bool, log *uploadLog, opts ...sandbox.Option) *sandbox.Client {
	var failed bool
	return proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/fs/write") {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength < 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"code":"bad_request","message":"a length is required"}}`)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		log.mu.Lock()
		log.lengths = append(log.lengths, r.ContentLength)
		log.sizes = append(log.sizes, int64(len(body)))
		log.sums = append(log.sums, sha256.Sum256(body))
		fail := failFirst && !failed
		failed = true
		log.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	}, opts...)
}

func TestChunkedUploadRefusedNamesTheOption(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusLengthRequired, http.StatusBadRequest} {
		e := newEnv(t)
		c := refusingChunked(t, e, status, false, new(uploadLog))
		sb, err := c.Create(t.Context(), sandbox.CreateParams{})
		require.NoError(t, err)

		err = sb.FS().WriteFile(t.Context(), "a.txt", []byte("hello"), 0o644)
		var cu *sandbox.ChunkedUploadError
		require.ErrorAs(t, err, &cu, "status %d", status)
		assert.Equal(t, status, cu.StatusCode)
		var ae *sandbox.APIError
		require.ErrorAs(t, err, &ae, "the API error stays reachable")
		assert.Equal(t, status, ae.StatusCode)
		assert.Contains(t, err.Error(), "sandbox.WithSizedUploads", "the error names the way out")
	}
}

// TestLocalRefusesChunkedUploads is how a user tests the configuration:
// the local backend refuses chunked uploads as such a proxy does.
func TestLocalRefusesChunkedUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithRefuseChunkedUploads())
	sb := e.create("")
	err := sb.FS().WriteFile(t.Context(), "a.txt", []byte("chunked"), 0o644)
	var cu *sandbox.ChunkedUploadError
	require.ErrorAs(t, err, &cu)
	assert.Equal(t, http.StatusLengthRequired, cu.StatusCode)

	sized := mustGetWith(t, e, sb.Name(), sandbox.WithSizedUploads(t.TempDir()))
	require.NoError(t, sized.FS().WriteFile(t.Context(), "a.txt", []byte("sized"), 0o644))
	got, err := sized.FS().ReadFile(t.Context(), "a.txt")
	require.NoError(t, err)
	assert.Equal(t, "sized", string(got))
}

// mustGetWith returns the named sandbox through a client of the fake made
// with opts.
func mustGetWith(t *testing.T, e *env, name string, opts ...sandbox.Option) *sandbox.Sandbox {
	t.Helper()
	sb, err := e.srv.Client(opts...).Get(t.Context(), name)
	require.NoError(t, err)
	return sb
}

func TestSizedUploadSendsExactLength(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("sized upload "), 10000)
	for _, level := range []int{gzip.NoCompression, gzip.BestSpeed} {
		e := newEnv(t)
		var log uploadLog
		spool := t.TempDir()
		c := refusingChunked(t, e, http.StatusLengthRequired, false, &log, sandbox.WithSizedUploads(spool))
		sb, err := c.Create(t.Context(), sandbox.CreateParams{})
		require.NoError(t, err)

		// A plain reader: the spool makes even a one-shot source complete.
		err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("dir/data.bin", bytes.NewReader(payload), int64(len(payload)))},
			atLevel(level))
		require.NoError(t, err, "level %d", level)
		length, size, _ := log.last()
		assert.Positive(t, length, "a Content-Length was sent")
		assert.Equal(t, length, size, "the declared length is the body's")
		got, err := sb.FS().ReadFile(t.Context(), "dir/data.bin")
		require.NoError(t, err)
		assert.Equal(t, payload, got, "the server received the same bytes")
		assertEmptyDir(t, spool, "the spool file is removed after success")
	}
}

func TestSizedUploadRetryRereadsTheSpool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var log uploadLog
	spool := t.TempDir()
	c := refusingChunked(t, e, http.StatusLengthRequired, true, &log, sandbox.WithSizedUploads(spool))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)

	payload := []byte("sent twice, read from the spool twice")
	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("f", bytes.NewReader(payload), int64(len(payload)))}, files.WriteParams{})
	require.NoError(t, err)
	require.Equal(t, 2, log.count(), "the 503 was retried")
	log.mu.Lock()
	assert.Equal(t, log.sums[0], log.sums[1], "the retry sent the same archive")
	assert.Equal(t, log.lengths[0], log.sizes[1])
	log.mu.Unlock()
	got, err := sb.FS().ReadFile(t.Context(), "f")
	require.NoError(t, err)
	assert.Equal(t, payload, got)
	assertEmptyDir(t, spool, "the spool file is removed")
}

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk on fire")
	}
	k := min(len(p), f.n)
	f.n -= k
	return k, nil
}

func TestSizedUploadSpoolRemovedOnFailureAndCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spool := t.TempDir()
	c := refusingChunked(t, e, http.StatusLengthRequired, false, new(uploadLog), sandbox.WithSizedUploads(spool))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)

	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("f", &failingReader{n: 1 << 20}, 2<<20)}, files.WriteParams{})
	var ee *files.EntryError
	require.ErrorAs(t, err, &ee, "the source's failure")
	assertEmptyDir(t, spool, "the spool file is removed after a failure")

	ctx, cancel := context.WithCancel(t.Context())
	r := &cancelAfter{r: newGenReader(64 << 20), after: 4 << 20, cancel: cancel}
	err = sb.FS().WriteFiles(ctx, []files.Entry{files.FromReader("g", r, 64<<20)}, files.WriteParams{})
	require.ErrorIs(t, err, context.Canceled)
	assertEmptyDir(t, spool, "the spool file is removed after a cancel")

	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromBytes("/", []byte("x"))}, files.WriteParams{})
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	assertEmptyDir(t, spool, "nothing is spooled for invalid input")
}

func TestSizedUploadSpoolRemovedOnCancelWhileSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	spool := t.TempDir()
	reading, release := make(chan struct{}), make(chan struct{})
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/fs/write") {
			next.ServeHTTP(w, r)
			return
		}
		_, _ = io.ReadFull(r.Body, make([]byte, 1024))
		close(reading)
		<-release // a server that never answers
	}, sandbox.WithSizedUploads(spool))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	spooled := make(chan int, 1)
	go func() {
		<-reading
		ents, _ := os.ReadDir(spool)
		spooled <- len(ents)
		cancel()
	}()
	err = sb.FS().WriteFiles(ctx, []files.Entry{files.FromReader("g", newGenReader(1<<20), 1<<20)}, files.WriteParams{})
	close(release)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, <-spooled, "the upload was sent from its spool file")
	assertEmptyDir(t, spool, "the spool file is removed after a cancel while sending")
}

// cancelAfter cancels a context once after bytes were read.
type cancelAfter struct {
	r      io.Reader
	read   int
	after  int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	if c.read >= c.after {
		c.cancel()
	}
	return n, err
}

func TestSizedUploadInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("large upload skipped in short mode")
	}
	const size = 256 << 20
	e := newEnv(t)
	spool := t.TempDir()
	var got countingLog
	c := proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if !strings.HasSuffix(r.URL.Path, "/fs/write") {
			next.ServeHTTP(w, r)
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		got.note(r.ContentLength, n)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}, sandbox.WithSizedUploads(spool))
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "sized"})
	require.NoError(t, err)

	hp := startHeapPeak()
	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("big.bin", newGenReader(size), size)}, files.WriteParams{})
	growth := hp.growth()
	require.NoError(t, err)
	t.Logf("spooled and uploaded 256 MiB (compressed) with peak heap growth %.1f MiB", float64(growth)/(1<<20))
	assert.Less(t, growth, uint64(16<<20), "peak heap growth")
	assert.Equal(t, got.length, got.n, "the exact length was declared")
	assert.Greater(t, got.n, int64(size), "random data does not compress")
	assertEmptyDir(t, spool, "the spool file is removed")
}

type countingLog struct {
	mu        sync.Mutex
	length, n int64
}

func (c *countingLog) note(length, n int64) {
	c.mu.Lock()
	c.length, c.n = length, n
	c.mu.Unlock()
}

func assertEmptyDir(t *testing.T, dir, msg string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, msg)
}

// BenchmarkWriteFilesSized compares an upload sent chunked with one sent
// WithSizedUploads: through a spool file when compressed, streamed with its
// computed length without compression.
func BenchmarkWriteFilesSized(b *testing.B) {
	text, _ := uploadData()
	for _, l := range []struct {
		name  string
		level int
	}{{"BestSpeed", gzip.BestSpeed}, {"NoCompression", gzip.NoCompression}} {
		for _, sized := range []bool{false, true} {
			name := map[bool]string{false: "chunked", true: "sized"}[sized]
			b.Run(name+"/"+l.name, func(b *testing.B) {
				srv, err := local.New()
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(srv.Close)
				var received atomic.Int64
				ts := httptest.NewServer(uploadDiscarder(srv.Handler(), everyRequest, &received))
				b.Cleanup(ts.Close)
				opts := []sandbox.Option{sandbox.WithBaseURL(ts.URL), sandbox.WithToken(srv.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID)}
				if sized {
					opts = append(opts, sandbox.WithSizedUploads(b.TempDir()))
				}
				c, err := sandbox.NewClient(opts...)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				sb, err := c.Create(ctx, sandbox.CreateParams{})
				if err != nil {
					b.Fatal(err)
				}
				entries := []files.Entry{files.FromBytes("big.bin", text)}
				b.SetBytes(uploadSize)
				b.ReportAllocs()
				for b.Loop() {
					if err := sb.FS().WriteFiles(ctx, entries, atLevel(l.level)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
