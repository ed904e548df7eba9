package sandbox_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// mintingProvider mints a new token each time its token is invalidated.
type mintingProvider struct {
	mu     sync.Mutex
	minted int
}

func (p *mintingProvider) token() string { return fmt.Sprintf("tok-%d", p.minted) }

func (p *mintingProvider) Credentials(context.Context) (auth.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return auth.Credentials{Token: p.token(), TeamID: local.TeamID, ProjectID: local.ProjectID}, nil
}

func (p *mintingProvider) Invalidate(stale string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if stale == p.token() {
		p.minted++
	}
}

// Hosted Vercel can briefly refuse a token it has just minted
// (vercel/sandbox#192, #247): the fresh token is sent once more.
func TestFreshTokenRefusedIsSentOnceMore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithFreshTokenRefusals(1))
	p := &mintingProvider{}
	c := e.srv.Client(sandbox.WithCredentials(p))

	_, err := c.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound, "authorized in the end")
	assert.Equal(t, []int{401, 401, 404}, statuses(e.srv, "GET", "/missing"), "refused, refreshed and refused, then the fresh token once more")
	assert.Equal(t, 1, p.minted, "one refresh")
}

func TestFreshTokenStillRefusedIsTheAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithFreshTokenRefusals(2))
	c := e.srv.Client(sandbox.WithCredentials(&mintingProvider{}))

	_, err := c.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrUnauthorized)
	assert.Equal(t, []int{401, 401, 401}, statuses(e.srv, "GET", "/missing"), "one more try, no loop")
}

func TestFreshTokenNeverRefusedWhenFriendly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, local.WithFreshTokenRefusals(1), local.WithFriendly())
	c := e.srv.Client(sandbox.WithCredentials(&mintingProvider{}))

	_, err := c.Get(t.Context(), "missing")
	require.ErrorIs(t, err, sandbox.ErrNotFound)
	assert.Equal(t, []int{404}, statuses(e.srv, "GET", "/missing"))
}
