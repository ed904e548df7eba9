package sandbox_test

import (
	"compress/gzip"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/files"
	"github.com/sbx-go/vercel-sandbox/sandbox"
)

// genReader yields n deterministic pseudo-random bytes without holding
// them: it cycles through a 64 KiB block, shifted on every lap.
type genReader struct {
	block []byte
	off   int64
	n     int64
}

func newGenReader(n int64) *genReader {
	block := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range block {
		block[i] = byte(r.Uint32())
	}
	return &genReader{block: block, n: n}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	if rem := g.n - g.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	total := 0
	for len(p) > 0 {
		lap := g.off / int64(len(g.block))
		i := int((g.off + lap) % int64(len(g.block)))
		c := copy(p, g.block[i:])
		p = p[c:]
		g.off += int64(c)
		total += c
	}
	return total, nil
}

// heapPeak samples the heap every few milliseconds until stop is called,
// and returns the largest growth over the heap at start.
type heapPeak struct {
	base, peak uint64
	stop       chan struct{}
	done       chan struct{}
}

func startHeapPeak() *heapPeak {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapPeak{base: ms.HeapInuse, peak: ms.HeapInuse, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			h.peak = max(h.peak, ms.HeapInuse, ms.HeapAlloc)
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// growth stops sampling and returns the peak growth in bytes.
func (h *heapPeak) growth() uint64 {
	close(h.stop)
	<-h.done
	return h.peak - h.base
}

// discardUploads answers uploads by counting and discarding their bytes,
// and passes everything else to the fake.
func discardUploads(t *testing.T, e *env, got *atomic.Int64) *sandbox.Client {
	return proxy(t, e.srv, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		uploadDiscarder(next, everyRequest, got).ServeHTTP(w, r)
	})
}

const maxHeapGrowth = 32 << 20

// The memory tests do not run in parallel: the heap is shared by every
// test of the process, and other tests would pollute the measurement.

func TestUploadOneGiBInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB upload skipped in short mode")
	}
	const size = 1 << 30
	e := newEnv(t)
	var received atomic.Int64
	c := discardUploads(t, e, &received)
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "big"})
	require.NoError(t, err)

	var progressBytes atomic.Int64
	hp := startHeapPeak()
	began := time.Now()
	err = sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("big.bin", newGenReader(size), size)},
		files.WriteParams{Stored: true, Progress: func(p files.Progress) { progressBytes.Store(p.Bytes) }})
	elapsed := time.Since(began)
	growth := hp.growth()
	require.NoError(t, err)

	t.Logf("uploaded 1 GiB in %v; peak heap growth %.1f MiB", elapsed.Round(time.Millisecond), float64(growth)/(1<<20))
	assert.Less(t, growth, uint64(maxHeapGrowth), "peak heap growth")
	assert.Equal(t, int64(size), progressBytes.Load())
	assert.Greater(t, received.Load(), int64(size), "the archive (content plus headers) reached the server")
}

func TestUploadReplayableInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("large upload skipped in short mode")
	}
	// A file can be reopened, so the upload goes through the retrying
	// path; it must stream there too, not be buffered for a resend.
	const size = 256 << 20
	local := filepath.Join(t.TempDir(), "sparse.bin")
	f, err := os.Create(local)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size))
	require.NoError(t, f.Close())
	entry, err := files.FromFile("sparse.bin", local)
	require.NoError(t, err)
	require.True(t, entry.Replayable())

	e := newEnv(t)
	var received atomic.Int64
	c := discardUploads(t, e, &received)
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "replay"})
	require.NoError(t, err)

	hp := startHeapPeak()
	err = sb.FS().WriteFiles(t.Context(), []files.Entry{entry}, atLevel(gzip.NoCompression))
	growth := hp.growth()
	require.NoError(t, err)
	t.Logf("uploaded 256 MiB (replayable) with peak heap growth %.1f MiB", float64(growth)/(1<<20))
	assert.Less(t, growth, uint64(maxHeapGrowth), "peak heap growth")
	assert.Greater(t, received.Load(), int64(size))
}

func TestUpload64MiBRoundTrip(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("large upload skipped in short mode")
	}
	const size = 64 << 20
	e := newEnv(t)
	sb := e.create("roundtrip")
	require.NoError(t, sb.FS().WriteFiles(t.Context(), []files.Entry{files.FromReader("data/big.bin", newGenReader(size), size)},
		atLevel(gzip.BestSpeed)))

	want := sha256.New()
	_, err := io.Copy(want, newGenReader(size))
	require.NoError(t, err)

	rc, err := sb.FS().Open(t.Context(), "data/big.bin")
	require.NoError(t, err)
	defer rc.Close()
	got := sha256.New()
	n, err := io.Copy(got, rc)
	require.NoError(t, err)
	assert.Equal(t, int64(size), n)
	assert.Equal(t, want.Sum(nil), got.Sum(nil))
}
