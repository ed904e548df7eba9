package benchdata

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReproducibleAndSized(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000, 1 << 20} {
		assert.Len(t, Text(n), n)
		assert.Len(t, Random(n), n)
	}
	assert.Equal(t, Text(1<<16), Text(1<<16))
	assert.Equal(t, Random(1<<16), Random(1<<16))
	assert.NotEqual(t, Random(1<<16), Text(1<<16))
}

// TestCompressibility pins the property the benchmarks rely on: text
// compresses to well under half, random data not at all.
func TestCompressibility(t *testing.T) {
	ratio := func(data []byte) float64 {
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		require.NoError(t, err)
		_, err = zw.Write(data)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		return float64(b.Len()) / float64(len(data))
	}
	assert.Less(t, ratio(Text(4<<20)), 0.5)
	assert.Greater(t, ratio(Random(4<<20)), 0.99)
}
