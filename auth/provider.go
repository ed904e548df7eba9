// Package auth finds and refreshes the credentials that every Vercel Sandbox
// API call needs: a bearer token plus the team and project it acts for.
//
// A Provider is asked for Credentials before every request, with the
// request's context, so a provider may refresh (for example an OIDC token five
// minutes before it expires) and a caller may give up on its own context
// without cancelling a refresh shared with other callers.
//
// The package holds the provider core: Provider, Static, Chain, the OIDC
// provider and its refresh, the token in the request context, and Default,
// the chain the TypeScript SDK follows. Getting tokens from the Vercel CLI
// on a developer machine is package auth/vercelcli.
package auth

import (
	"context"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Source says where credentials came from.
type Source string

// Credential sources.
const (
	SourceExplicit       Source = "explicit"
	SourceOIDCContext    Source = "oidc-context"
	SourceOIDCFile       Source = "oidc-file"
	SourceOIDCEnv        Source = "oidc-env"
	SourceAccessTokenEnv Source = "access-token-env"
	SourceLinkedProject  Source = "linked-project"
)

// Credentials is what every Sandbox API call needs.
//
// Its String and GoString methods never print the token.
type Credentials struct {
	Token     string
	TeamID    string    // sent as the teamId query parameter
	ProjectID string    // sent in the body or query of project-scoped calls
	Expiry    time.Time // zero: unknown or does not expire
	Source    Source
}

// Provider supplies credentials. Implementations must be safe for
// concurrent use.
type Provider interface {
	Credentials(ctx context.Context) (Credentials, error)
}

// Invalidator is implemented by providers that can be told a token was
// rejected (HTTP 401), so the next call to Credentials fetches a new one.
type Invalidator interface {
	Invalidate(staleToken string)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context) (Credentials, error)

// Credentials calls f(ctx). A nil f gives an *InputError.
func (f ProviderFunc) Credentials(ctx context.Context) (Credentials, error) {
	if f == nil {
		return Credentials{}, apierr.Invalid("ProviderFunc", "nil function")
	}
	return f(ctx)
}
