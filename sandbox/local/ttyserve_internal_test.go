package local

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// A close frame's reason fits the frame, cut on a character boundary.
func TestCloseReasonFits(t *testing.T) {
	assert.Equal(t, "short", closeReason("short"))
	for _, long := range []string{strings.Repeat("x", 200), strings.Repeat("é", 100), strings.Repeat("日本", 50)} {
		got := closeReason(long)
		assert.LessOrEqual(t, len(got), maxCloseReason)
		assert.True(t, utf8.ValidString(got), got)
		assert.True(t, strings.HasSuffix(got, "…"))
	}
}
