package fault

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Whatever a test expires, the injector remembers a bounded number of
// tokens: the oldest is forgotten first.
func TestExpiredTokensBounded(t *testing.T) {
	t.Parallel()
	in := NewInjector()
	for i := range maxExpiredTokens + 10 {
		in.expireToken(fmt.Sprintf("tok-%d", i), "fault")
	}
	assert.Len(t, in.expired, maxExpiredTokens)
	assert.Len(t, in.expiredOrder, maxExpiredTokens)
	_, old := in.expiredBy("tok-0")
	assert.False(t, old, "the oldest is forgotten")
	_, recent := in.expiredBy(fmt.Sprintf("tok-%d", maxExpiredTokens+9))
	assert.True(t, recent)

	in.expireToken("tok-20", "again")
	assert.Len(t, in.expired, maxExpiredTokens, "expiring a token twice keeps one entry")
}
