package capture

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBuffer(t *testing.T) {
	t.Parallel()
	b := New(5)
	n, err := b.Write([]byte("abc"))
	assert.NoError(t, err)
	assert.Equal(t, 3, n)
	n, _ = b.Write([]byte("defgh"))
	assert.Equal(t, 5, n)
	assert.Equal(t, "abcde", string(b.Bytes()))
	assert.EqualValues(t, 8, b.Total())
	assert.True(t, b.Truncated())

	none := New(-1)
	none.Write([]byte("x"))
	assert.Empty(t, none.Bytes())
	assert.True(t, none.Truncated())
	assert.EqualValues(t, 1, none.Total())

	exact := New(3)
	exact.Write([]byte("abc"))
	assert.False(t, exact.Truncated())
}
