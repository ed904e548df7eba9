package sandbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// A repeated stop is answered 200 with the stopped session, not 410; the
// client tells it from a stop it made by the server's clock.
func TestRepeatedStopAnswered200IsAlreadyStopped(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]local.Option{"hosted": nil, "friendly": {local.WithFriendly()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := authtest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e := newEnv(t, append([]local.Option{local.WithClock(clock.Now)}, opts...)...)
			sb := e.create("")
			stale, err := e.c.Get(t.Context(), sb.Name()) // a handle that will not see the stop
			require.NoError(t, err)

			first, err := e.c.StopSession(t.Context(), sb.SessionID())
			require.NoError(t, err)
			assert.False(t, first.AlreadyStopped, "this call stopped it")
			clock.Advance(time.Minute)

			again, err := e.c.StopSession(t.Context(), sb.SessionID())
			require.NoError(t, err)
			assert.True(t, again.AlreadyStopped, "a 200 for a session stopped before the call")
			assert.Equal(t, sandbox.StatusStopped, again.Session.Status)

			res, err := stale.Stop(t.Context())
			require.NoError(t, err)
			assert.True(t, res.AlreadyStopped, "a stale handle is told too")
			assert.Len(t, requests(e.srv, "POST", "/stop"), 3, "no extra requests")
		})
	}
}
