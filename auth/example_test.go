package auth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/auth/authtest"
)

func ExampleStatic() {
	p := auth.Static(auth.Credentials{Token: "my-access-token", TeamID: "team_123", ProjectID: "prj_456"})
	c, err := p.Credentials(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println(c) // the token is never printed
	// Output: auth.Credentials{Token:[REDACTED] TeamID:"team_123" ProjectID:"prj_456" Source:explicit}
}

func ExampleStatic_missing() {
	_, err := auth.Static(auth.Credentials{Token: "my-access-token", TeamID: "", ProjectID: ""}).Credentials(context.Background())
	fmt.Println(err)
	fmt.Println(errors.Is(err, auth.ErrMissingParams))
	// Output:
	// Missing credentials parameters to access the Vercel API: teamId, projectId
	// true
}

func ExampleDefault() {
	// A request handled on Vercel carries its own OIDC token (see
	// Middleware); Default prefers it to every ambient source. Pass
	// vercelcli.Default instead to also mint tokens with the Vercel CLI login.
	p := auth.Default(auth.DefaultOptions{})
	ctx := auth.WithOIDCToken(context.Background(), authtest.Token("team_123", "prj_456", time.Time{}))
	c, err := p.Credentials(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Source, c.TeamID, c.ProjectID)
	// Output: oidc-context team_123 prj_456
}

func ExampleMiddleware() {
	p := auth.Default(auth.DefaultOptions{})
	handler := auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Calls made with r.Context() use this request's OIDC token.
		c, err := p.Credentials(r.Context())
		if err != nil {
			http.Error(w, "no credentials", http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, c.Source, c.TeamID, c.ProjectID)
	}))

	// On Vercel the platform sets this header on every request.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(auth.HeaderOIDCToken, authtest.Token("team_123", "prj_456", time.Time{}))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Print(rec.Body.String())
	// Output: oidc-context team_123 prj_456
}

func ExampleParseClaims() {
	token := authtest.MakeJWT(map[string]any{
		"owner_id":   "team_123",
		"project_id": "prj_456",
		"exp":        1700000000,
	})
	c, err := auth.ParseClaims(token)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.OwnerID, c.ProjectID, c.Expiry.UTC().Format(time.RFC3339))
	// Output: team_123 prj_456 2023-11-14T22:13:20Z
}

func ExampleChain() {
	// Prefer the request's OIDC token, else a fixed access token.
	p := auth.Chain(
		auth.ProviderFunc(func(ctx context.Context) (auth.Credentials, error) {
			tok, ok := auth.OIDCTokenFromContext(ctx)
			if !ok {
				return auth.Credentials{}, auth.ErrNotApplicable
			}
			c, err := auth.ParseClaims(tok)
			if err != nil {
				return auth.Credentials{}, err
			}
			return auth.Credentials{Token: tok, TeamID: c.OwnerID, ProjectID: c.ProjectID, Source: auth.SourceOIDCContext}, nil
		}),
		auth.Static(auth.Credentials{Token: "my-access-token", TeamID: "team_123", ProjectID: "prj_456"}),
	)
	c, _ := p.Credentials(context.Background())
	fmt.Println(c.Source)
	// Output: explicit
}

func ExampleNewOIDCProvider() {
	p := auth.NewOIDCProvider(auth.OIDCOptions{
		Source: auth.FromEnv(auth.EnvOIDCToken),
		// Renew the token before it expires; vercelcli.LinkedProjectRefresher
		// does it with the Vercel CLI login.
		Refresher: auth.RefresherFunc(func(ctx context.Context, t auth.Target) (string, error) {
			return "", fmt.Errorf("no way to renew a token for project %q in this example", t.ProjectID)
		}),
		OnRefreshError: func(err error) {
			fmt.Println("OIDC refresh failed:", err)
		},
	})
	_ = p // pass p to the sandbox client
}
