package files

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBoundedMemory streams 1 GiB of generated content through
// newTarGzReader and checks that the heap does not grow with it. It is not
// parallel on purpose: parallel tests are paused while it runs, so their
// allocations do not disturb the measurement.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	t.Run("NoCompression", func(t *testing.T) { testBoundedMemory(t, gzip.NoCompression) })
	t.Run("BestSpeed", func(t *testing.T) {
		if raceEnabled {
			t.Skip("compressing 1 GiB is too slow under the race detector")
		}
		testBoundedMemory(t, gzip.BestSpeed)
	})
}

func testBoundedMemory(t *testing.T, level int) {
	const (
		total   = 1 << 30
		files   = 8
		perFile = total / files
		limit   = 32 << 20
	)
	entries := make([]Entry, 0, files+1)
	for i := range files {
		entries = append(entries, FromReader(fmt.Sprintf("data/part-%d.bin", i), newPatternReader(perFile), perFile))
	}
	entries = append(entries, FromBytes("data/README", []byte("generated\n")))

	wantLen, known, err := Length(cwd, entries, atLevel(level))
	require.NoError(t, err)
	assert.Equal(t, level == gzip.NoCompression, known, "the length is known without compression only")

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseInuse, baseAlloc, baseTotal := ms.HeapInuse, ms.HeapAlloc, ms.TotalAlloc

	var (
		mu                   sync.Mutex
		peakInuse, peakAlloc uint64
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peakInuse = max(peakInuse, ms.HeapInuse)
		peakAlloc = max(peakAlloc, ms.HeapAlloc)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()

	start := time.Now()
	var last Progress
	rc, err := newTarGzReader(context.Background(), cwd, entries,
		WriteParams{Level: atLevel(level).Level, Stored: atLevel(level).Stored, Progress: func(p Progress) { last = p }})
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	elapsed := time.Since(start)
	close(stop)
	wg.Wait()
	sample()

	runtime.ReadMemStats(&ms)
	growInuse := int64(peakInuse) - int64(baseInuse)
	growAlloc := int64(peakAlloc) - int64(baseAlloc)
	t.Logf("streamed %d MiB of content (%d MiB of archive) in %v (%.0f MiB/s)",
		total>>20, n>>20, elapsed.Round(time.Millisecond), float64(total)/(1<<20)/elapsed.Seconds())
	t.Logf("peak heap growth: HeapInuse %+.1f MiB, HeapAlloc %+.1f MiB; allocated in all %.1f MiB",
		float64(growInuse)/(1<<20), float64(growAlloc)/(1<<20), float64(ms.TotalAlloc-baseTotal)/(1<<20))

	assert.Greater(t, n, int64(total))
	if level == gzip.NoCompression {
		assert.Equal(t, wantLen, n, "Length")
	}
	assert.True(t, last.Done)
	assert.Equal(t, int64(total+len("generated\n")), last.Bytes)
	assert.Less(t, growInuse, int64(limit), "HeapInuse grew by %d bytes", growInuse)
	assert.Less(t, growAlloc, int64(limit), "HeapAlloc grew by %d bytes", growAlloc)
}
