package authtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/authtest"
)

func ExampleToken() {
	clock := authtest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	p := auth.NewOIDCProvider(auth.OIDCOptions{
		Source: auth.FromContext(),
		Clock:  clock,
	})
	ctx := auth.WithOIDCToken(context.Background(), authtest.Token("team_1", "prj_1", clock.Now().Add(time.Hour)))
	c, err := p.Credentials(ctx)
	fmt.Println(c.TeamID, c.ProjectID, err)

	clock.Advance(2 * time.Hour) // past the expiry, and nothing to refresh with
	_, err = p.Credentials(ctx)
	fmt.Println(err != nil)
	// Output:
	// team_1 prj_1 <nil>
	// true
}
