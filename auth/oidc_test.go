package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

// Tests 13 to 16.
func TestOIDC_RefreshBoundaries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		exp         time.Time // zero: no exp claim
		wantRefresh bool
	}{
		{"valid for an hour", t0.Add(time.Hour), false},
		{"expires in 4 minutes", t0.Add(4 * time.Minute), true},
		{"exactly at the buffer", t0.Add(DefaultRefreshBuffer), false},
		{"one second inside the buffer", t0.Add(DefaultRefreshBuffer - time.Second), true},
		{"no exp", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			old := tok("team_old", "prj_old", tt.exp)
			fresh := tok("team_new", "prj_old", t0.Add(12*time.Hour))
			f.env.Set(EnvOIDCToken, old)
			f.srv.Respond(tokenResponse(fresh))

			p := f.oidc(OIDCOptions{})
			c, err := p.Credentials(context.Background())
			require.NoError(t, err)
			if !tt.wantRefresh {
				assert.Zero(t, f.srv.Hits())
				assert.Equal(t, old, c.Token)
				assert.Equal(t, "team_old", c.TeamID)
				return
			}
			assert.EqualValues(t, 1, f.srv.Hits())
			assert.Equal(t, fresh, c.Token)
			assert.Equal(t, "team_new", c.TeamID, "team comes from the new token's owner_id")
			assert.Equal(t, mintRequest{Method: "POST", Path: "/v1/projects/prj_old/token", RawQuery: "source=vercel-oidc-refresh&teamId=team_old", Authorization: "Bearer cli_token"},
				f.lastRequest(), "the refresh targets the old token's claims")

			// The refreshed token is kept: no second request.
			c, err = p.Credentials(context.Background())
			require.NoError(t, err)
			assert.Equal(t, fresh, c.Token)
			assert.EqualValues(t, 1, f.srv.Hits())
		})
	}
}

// Test 19.
func TestOIDC_RefreshFailureKeepsValidTokenAndBacksOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := tok("team", "prj", t0.Add(2*time.Minute)) // inside the buffer, not expired
	f.env.Set(EnvOIDCToken, old)
	var hookErrs []error
	var mu sync.Mutex
	p := f.oidc(OIDCOptions{
		RefreshBackoff: 10 * time.Second,
		OnRefreshError: func(err error) { mu.Lock(); hookErrs = append(hookErrs, err); mu.Unlock() },
	})
	hooks := func() int { mu.Lock(); defer mu.Unlock(); return len(hookErrs) }

	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, old, c.Token)
	assert.EqualValues(t, 1, f.srv.Hits())
	require.Equal(t, 1, hooks())
	assert.Contains(t, hookErrs[0].Error(), "500")

	f.clock.Advance(5 * time.Second)
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, old, c.Token)
	assert.EqualValues(t, 1, f.srv.Hits(), "no new attempt inside the backoff window")
	assert.Equal(t, 1, hooks())

	f.clock.Advance(6 * time.Second)
	_, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 2, f.srv.Hits(), "retried after the window")
	assert.Equal(t, 2, hooks())
}

// Test 20.
func TestOIDC_RefreshFailureAfterExpiry(t *testing.T) {
	t.Parallel()
	old := tok("team", "prj", t0.Add(-time.Second))
	setup := func(t *testing.T, opts OIDCOptions) *OIDCProvider {
		f := newFixture(t)
		f.env.Set(EnvOIDCToken, old)
		return f.oidc(opts)
	}
	t.Run("error by default", func(t *testing.T) {
		t.Parallel()
		_, err := setup(t, OIDCOptions{}).Credentials(context.Background())
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrRefreshFailed)
		assert.Contains(t, err.Error(), "500 Internal Server Error")
		assert.NotContains(t, err.Error(), old)
	})
	t.Run("stale token on request", func(t *testing.T) {
		t.Parallel()
		c, err := setup(t, OIDCOptions{StaleOnRefreshFailure: true}).Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, old, c.Token)
	})
}

// Test 22.
func TestOIDC_ConcurrentRefreshIsShared(t *testing.T) {
	t.Parallel()
	const callers = 100
	f := newFixture(t)
	f.env.Set(EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
	fresh := tok("team", "prj", t0.Add(12*time.Hour))
	release := make(chan struct{})
	f.srv.Respond(func(w http.ResponseWriter, r *http.Request) {
		<-release
		tokenResponse(fresh)(w, r)
	})
	p := f.oidc(OIDCOptions{})
	var waiting atomic.Int64
	p.waitHook = func() {
		if waiting.Add(1) == callers {
			close(release) // everyone is lined up behind the one refresh
		}
	}

	var wg sync.WaitGroup
	results := make([]Credentials, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = p.Credentials(context.Background()) })
	}
	wg.Wait()
	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, fresh, results[i].Token)
	}
	assert.EqualValues(t, 1, f.srv.Hits())
}

// Test 23.
func TestOIDC_CancelledWaiterDoesNotCancelRefresh(t *testing.T) {
	t.Parallel()
	const others = 4
	f := newFixture(t)
	f.env.Set(EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
	fresh := tok("team", "prj", t0.Add(12*time.Hour))
	arrived, release := make(chan struct{}), make(chan struct{})
	f.srv.Respond(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		tokenResponse(fresh)(w, r)
	})
	p := f.oidc(OIDCOptions{})
	var waiting sync.WaitGroup
	waiting.Add(1 + others)
	p.waitHook = waiting.Done

	// The first caller starts the refresh, then gives up.
	ctx, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := p.Credentials(ctx)
		firstErr <- err
	}()
	<-arrived

	var wg sync.WaitGroup
	results := make([]Credentials, others)
	errs := make([]error, others)
	for i := range others {
		wg.Go(func() { results[i], errs[i] = p.Credentials(context.Background()) })
	}
	waiting.Wait()
	cancel()
	assert.ErrorIs(t, <-firstErr, context.Canceled)

	close(release)
	wg.Wait()
	for i := range others {
		require.NoError(t, errs[i])
		assert.Equal(t, fresh, results[i].Token)
	}
	assert.EqualValues(t, 1, f.srv.Hits())
}

// Test 24. Not parallel: it checks for leaked goroutines.
func TestOIDC_RefreshTimeout(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	f := newFixture(t)
	f.env.Set(EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
	release := make(chan struct{})
	f.srv.Respond(func(w http.ResponseWriter, r *http.Request) {
		select { // hangs far longer than the refresh timeout
		case <-release:
		case <-r.Context().Done():
		}
	})
	p := f.oidc(OIDCOptions{RefreshTimeout: 50 * time.Millisecond})

	start := time.Now()
	_, err := p.Credentials(context.Background())
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.ErrorIs(t, err, ErrRefreshFailed)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "did not finish within 50ms")

	close(release)
	f.srv.Close()
}

func TestOIDC_InvalidateForcesRefresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := tok("team", "prj", t0.Add(time.Hour))
	fresh := tok("team", "prj", t0.Add(2*time.Hour))
	f.env.Set(EnvOIDCToken, old)
	f.srv.Respond(tokenResponse(fresh))
	p := f.oidc(OIDCOptions{})
	var _ Invalidator = p

	p.Invalidate("some-other-token")
	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	require.Equal(t, old, c.Token)
	assert.Zero(t, f.srv.Hits())

	p.Invalidate(old)
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, fresh, c.Token)
	assert.EqualValues(t, 1, f.srv.Hits())

	// The env still holds the old token; it is not adopted again.
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, fresh, c.Token)
}

func TestOIDC_InvalidateWithFailingRefresh(t *testing.T) {
	t.Parallel()
	old := tok("team", "prj", t0.Add(time.Hour))
	p := NewOIDCProvider(OIDCOptions{
		Source: func(context.Context) (string, bool, error) { return old, true, nil },
		Refresher: RefresherFunc(func(context.Context, Target) (string, error) {
			return old, nil // hands back the rejected token
		}),
		Clock: fixedClock(t0),
	})
	_, err := p.Credentials(context.Background())
	require.NoError(t, err)
	p.Invalidate(old)
	_, err = p.Credentials(context.Background())
	assert.ErrorIs(t, err, ErrRefreshFailed)
}

func TestOIDC_SourceRotationAndNoRefresher(t *testing.T) {
	t.Parallel()
	clock := fixedClock(t0)
	var cur atomic.Value
	cur.Store(tok("team_a", "prj", t0.Add(time.Hour)))
	p := NewOIDCProvider(OIDCOptions{
		Source: func(context.Context) (string, bool, error) { return cur.Load().(string), true, nil },
		Label:  SourceOIDCFile,
		Clock:  clock,
	})
	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "team_a", c.TeamID)
	assert.Equal(t, SourceOIDCFile, c.Source)

	// A new token from the source replaces the held one.
	cur.Store(tok("team_b", "prj", t0.Add(2*time.Hour)))
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "team_b", c.TeamID)

	// A new token that is already expiring does not replace a good one.
	cur.Store(tok("team_c", "prj", t0.Add(time.Minute)))
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "team_b", c.TeamID)

	// Without a refresher, an expired token is an error.
	q := NewOIDCProvider(OIDCOptions{
		Source: func(context.Context) (string, bool, error) { return tok("t", "p", t0.Add(-time.Second)), true, nil },
		Clock:  clock,
	})
	_, err = q.Credentials(context.Background())
	assert.ErrorIs(t, err, ErrRefreshFailed)
}

func TestOIDC_NoTokenAtAll(t *testing.T) {
	t.Parallel()
	cause := errors.New("nothing to mint with")
	env := newTestEnv("VERCEL_URL", "x.vercel.app")
	p := NewOIDCProvider(OIDCOptions{
		Refresher: RefresherFunc(func(context.Context, Target) (string, error) { return "", cause }),
		sys:       host.System{LookupEnv: env.Lookup},
	})
	_, err := p.Credentials(context.Background())
	assert.ErrorIs(t, err, ErrVercelOIDCContext)
	assert.ErrorIs(t, err, cause)
}

func TestOIDC_SourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	p := NewOIDCProvider(OIDCOptions{Source: func(context.Context) (string, bool, error) { return "", false, boom }})
	_, err := p.Credentials(context.Background())
	assert.ErrorIs(t, err, boom)
}

func TestOIDC_StringHidesToken(t *testing.T) {
	t.Parallel()
	jwt := tok("team", "prj", time.Time{})
	p := NewOIDCProvider(OIDCOptions{Source: func(context.Context) (string, bool, error) { return jwt, true, nil }})
	_, err := p.Credentials(context.Background())
	require.NoError(t, err)
	for _, s := range []string{p.String(), p.GoString()} {
		assert.NotContains(t, s, jwt)
		assert.Contains(t, s, "team")
	}
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// TestRefreshErrorHidesTokens: a refresher whose error quotes the held
// token and another token shape (as a server echoing them would make it)
// gives errors, and OnRefreshError, without either.
func TestRefreshErrorHidesTokens(t *testing.T) {
	t.Parallel()
	clock := authtest.NewClock(time.Unix(1_700_000_000, 0))
	held := authtest.Token("team", "prj", clock.Now().Add(-time.Minute))
	other := "vcp" + "_" + strings.Repeat("Zx9", 10)
	var reported string
	p := NewOIDCProvider(OIDCOptions{
		Source: func(context.Context) (string, bool, error) { return held, true, nil },
		Refresher: RefresherFunc(func(context.Context, Target) (string, error) {
			return "", errors.New("server said: token " + held + " and " + other + " refused")
		}),
		Clock:          clock,
		OnRefreshError: func(err error) { reported = err.Error() },
	})
	_, err := p.Credentials(t.Context())
	require.ErrorIs(t, err, ErrRefreshFailed)
	for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), reported} {
		assert.NotContains(t, text, held)
		assert.NotContains(t, text, other)
		assert.Contains(t, text, "refused")
	}
}
