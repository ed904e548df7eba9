// Package benchdata generates the reproducible content that the upload and
// archive benchmarks of several packages share, so that their figures are
// measured on the same bytes, and the measure of what a test allocated.
package benchdata

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
)

// Text returns n bytes of text-like content: lines of words drawn with a
// Zipf distribution from a vocabulary of 4096 pseudo-words. gzip shrinks it
// to about 37 % (BestSpeed: about 41 %). The same n gives the same bytes.
func Text(n int) []byte {
	r := rand.New(rand.NewChaCha8([32]byte{42}))
	vocab := make([]string, 4096)
	for i := range vocab {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = "etaoinshrdlucmfwypvbgkqjxz_"[r.IntN(27)]
		}
		vocab[i] = string(w)
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	var b bytes.Buffer
	b.Grow(n + 128)
	for b.Len() < n {
		for range 1 + r.IntN(12) {
			b.WriteString(vocab[zipf.Uint64()])
			b.WriteByte(" .,( "[r.IntN(5)])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:n]
}

// Random returns n incompressible pseudo-random bytes. The same n gives the
// same bytes.
func Random(n int) []byte {
	out := make([]byte, n+7)
	r := rand.New(rand.NewChaCha8([32]byte{43}))
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(out[i:], r.Uint64())
	}
	return out[:n]
}

// Allocated runs f and returns how many bytes the process allocated on
// the heap meanwhile (after a collection): an upper bound of how much f
// grew the heap. Every goroutine's allocations count, so a test that
// measures with it must not run in parallel with others.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
