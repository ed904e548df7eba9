package auth

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

type invalidatorFunc struct {
	ProviderFunc
	got *[]string
}

func (p invalidatorFunc) Invalidate(tok string) { *p.got = append(*p.got, tok) }

func TestChain(t *testing.T) {
	t.Parallel()
	skip := ProviderFunc(func(context.Context) (Credentials, error) { return Credentials{}, ErrNotApplicable })
	skipWhy := ProviderFunc(func(context.Context) (Credentials, error) {
		return Credentials{}, notApplicable(errors.New("no widget configured"))
	})
	good := Static(Credentials{Token: "tok", TeamID: "team", ProjectID: "prj"})
	boom := errors.New("boom")
	bad := ProviderFunc(func(context.Context) (Credentials, error) { return Credentials{}, boom })

	c, err := Chain(skip, skipWhy, good, bad).Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "tok", c.Token)

	_, err = Chain(skip, bad, good).Credentials(context.Background())
	assert.ErrorIs(t, err, boom, "an error other than ErrNotApplicable stops the chain")

	_, err = Chain(skip, skipWhy).Credentials(context.Background())
	assert.ErrorIs(t, err, ErrNotApplicable)
	assert.EqualError(t, err, "no credentials found: no widget configured")

	_, err = Chain().Credentials(context.Background())
	assert.ErrorIs(t, err, ErrNotApplicable)

	// A Default that finds nothing is not applicable inside a larger chain.
	empty := Default(DefaultOptions{sys: host.System{LookupEnv: newTestEnv().Lookup, Getwd: func() (string, error) { return "/", nil }}})
	c, err = Chain(empty, good).Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, SourceExplicit, c.Source)
}

func TestChainInvalidate(t *testing.T) {
	t.Parallel()
	var a, b []string
	p := Chain(
		invalidatorFunc{ProviderFunc: func(context.Context) (Credentials, error) { return Credentials{}, ErrNotApplicable }, got: &a},
		Static(Credentials{Token: "tok", TeamID: "team", ProjectID: "prj"}),
		invalidatorFunc{got: &b},
	)
	inv, ok := p.(Invalidator)
	require.True(t, ok)
	inv.Invalidate("stale")
	assert.Equal(t, []string{"stale"}, a)
	assert.Equal(t, []string{"stale"}, b)
}
