package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// DefaultOptions configure Default. The zero value gives the behaviour of
// the TypeScript SDK, without minting tokens, plus the VERCEL_TOKEN
// extension.
type DefaultOptions struct {
	// Token, TeamID and ProjectID are explicit credentials. When any is set
	// all three are required (see Static) and nothing else is consulted.
	Token, TeamID, ProjectID string

	// DisableEnvAccessToken turns off the VERCEL_TOKEN tier, which the
	// TypeScript SDK does not have.
	DisableEnvAccessToken bool

	// Refresher mints and refreshes OIDC tokens: it renews the tokens of
	// tiers 3 and 4 before they expire, and supplies the token of tier 6.
	// vercelcli.LinkedProjectRefresher does it as the TypeScript SDK does,
	// from the Vercel CLI login; vercelcli.Default sets it. Nil: tokens
	// are used as found and tier 6 is skipped.
	Refresher Refresher

	// StaleOnRefreshFailure and OnRefreshError configure the OIDC tiers;
	// see OIDCOptions.
	StaleOnRefreshFailure bool
	OnRefreshError        func(error)

	sys host.System // the outside world; zero: the real process
}

// LinkedRefresher is a Refresher that mints tokens only for a project it
// can find, such as the one linked to the working directory. Default
// consults it as its last tier only when Linked returns nil; otherwise the
// tier does not apply, and Linked's error says why.
type LinkedRefresher interface {
	Refresher
	Linked() error
}

// Default returns the provider that finds credentials the way the
// TypeScript SDK does. On every call it takes the first of:
//
//  1. explicit Token, TeamID and ProjectID (any set: all required);
//  2. an OIDC token in the context (WithOIDCToken, Middleware);
//  3. the file named by VERCEL_OIDC_TOKEN_FILE, read on every call;
//  4. VERCEL_OIDC_TOKEN;
//  5. VERCEL_TOKEN with VERCEL_TEAM_ID (or VERCEL_ORG_ID) and
//     VERCEL_PROJECT_ID; an extension, see DisableEnvAccessToken;
//  6. an OIDC token minted by the Refresher (for a LinkedRefresher, only
//     when Linked reports a project).
//
// Team and project of OIDC tokens come from their claims. Tokens from
// tiers 3, 4 and 6 are refreshed before they expire (see OIDCProvider);
// context tokens are used as given, since the platform renews them.
//
// An error from tiers 1 and 5 is returned as is. An error from an OIDC tier,
// and the case where nothing applies, give an *OIDCContextError matching
// ErrVercelOIDCContext when VERCEL_URL is set and ErrLocalOIDCContext
// otherwise, wrapping the cause.
//
// Default does no I/O until Credentials is called. Differences from the
// TypeScript SDK: no interactive login; explicit credentials are never
// swapped for an ambient token; the process environment is never changed;
// an empty string counts as missing; a token past its expiry that cannot be
// refreshed is an error (see StaleOnRefreshFailure); failed refreshes back
// off.
//
// The provider implements Invalidator.
func Default(opts DefaultOptions) Provider {
	d := &defaultProvider{opts: opts, sys: opts.sys}
	newOIDC := func(src RawSource, label Source) *OIDCProvider {
		return newOIDCProvider(OIDCOptions{
			Source:                src,
			Refresher:             opts.Refresher,
			Label:                 label,
			StaleOnRefreshFailure: opts.StaleOnRefreshFailure,
			OnRefreshError:        opts.OnRefreshError,
			sys:                   opts.sys,
		})
	}
	d.file = newOIDC(envFileSource(d.sys), SourceOIDCFile)
	d.env = newOIDC(fromEnv(EnvOIDCToken, d.sys), SourceOIDCEnv)
	d.linked = newOIDC(nil, SourceLinkedProject)
	d.chain = Chain(
		ProviderFunc(d.explicit),
		ProviderFunc(d.fromContext),
		ProviderFunc(d.fromFile),
		ProviderFunc(d.fromEnv),
		ProviderFunc(d.accessTokenEnv),
		ProviderFunc(d.linkedProject),
	)
	return d
}

type defaultProvider struct {
	opts              DefaultOptions
	sys               host.System
	chain             Provider
	file, env, linked *OIDCProvider
}

var errNoOIDCToken = errors.New("no Vercel OIDC token: none in the request context, and " +
	EnvOIDCTokenFile + " and " + EnvOIDCToken + " are unset")

func (d *defaultProvider) Credentials(ctx context.Context) (Credentials, error) {
	c, err := d.chain.Credentials(ctx)
	if none, ok := err.(*noProviderError); ok {
		return Credentials{}, d.guidance(none)
	}
	return c, err
}

// Invalidate forwards staleToken to the OIDC providers.
func (d *defaultProvider) Invalidate(staleToken string) {
	d.file.Invalidate(staleToken)
	d.env.Invalidate(staleToken)
	d.linked.Invalidate(staleToken)
}

// String describes the provider without its token.
func (d *defaultProvider) String() string {
	return fmt.Sprintf("auth.Default(token=%s, teamID=%q, projectID=%q)", redact.Value(d.opts.Token), d.opts.TeamID, d.opts.ProjectID)
}

// GoString is String, so %#v does not print the token either.
func (d *defaultProvider) GoString() string { return d.String() }

func (d *defaultProvider) guidance(cause error) error {
	return &OIDCContextError{OnVercel: d.sys.Env("VERCEL_URL") != "", Cause: cause}
}

// oidcResult wraps an OIDC tier's error in the guidance error, except a
// context error of the caller's own, which is returned as is.
func (d *defaultProvider) oidcResult(ctx context.Context, c Credentials, err error) (Credentials, error) {
	if err == nil {
		return c, nil
	}
	if ce := ctx.Err(); ce != nil && errors.Is(err, ce) {
		return Credentials{}, err
	}
	var oe *OIDCContextError
	if errors.As(err, &oe) {
		return Credentials{}, err
	}
	return Credentials{}, d.guidance(err)
}

func (d *defaultProvider) explicit(context.Context) (Credentials, error) {
	o := d.opts
	if o.Token == "" && o.TeamID == "" && o.ProjectID == "" {
		return Credentials{}, ErrNotApplicable
	}
	return staticCredentials(o.Token, o.TeamID, o.ProjectID)
}

func (d *defaultProvider) fromContext(ctx context.Context) (Credentials, error) {
	tok, ok := OIDCTokenFromContext(ctx)
	if !ok {
		return Credentials{}, ErrNotApplicable
	}
	c, err := ParseClaims(tok)
	if err != nil {
		return d.oidcResult(ctx, Credentials{}, err)
	}
	return credentialsFrom(tok, c, SourceOIDCContext), nil
}

func (d *defaultProvider) fromFile(ctx context.Context) (Credentials, error) {
	if d.sys.Env(EnvOIDCTokenFile) == "" {
		return Credentials{}, ErrNotApplicable
	}
	c, err := d.file.Credentials(ctx)
	return d.oidcResult(ctx, c, err)
}

func (d *defaultProvider) fromEnv(ctx context.Context) (Credentials, error) {
	if d.sys.Env(EnvOIDCToken) == "" {
		return Credentials{}, notApplicable(errNoOIDCToken)
	}
	c, err := d.env.Credentials(ctx)
	return d.oidcResult(ctx, c, err)
}

func (d *defaultProvider) accessTokenEnv(context.Context) (Credentials, error) {
	if d.opts.DisableEnvAccessToken {
		return Credentials{}, ErrNotApplicable
	}
	tok := d.sys.Env("VERCEL_TOKEN")
	if tok == "" {
		return Credentials{}, ErrNotApplicable
	}
	team := cmp.Or(d.sys.Env("VERCEL_TEAM_ID"), d.sys.Env("VERCEL_ORG_ID"))
	project := d.sys.Env("VERCEL_PROJECT_ID")
	if missing := unset("VERCEL_TEAM_ID", team, "VERCEL_PROJECT_ID", project); len(missing) > 0 {
		return Credentials{}, &MissingEnvError{Missing: missing}
	}
	return Credentials{Token: tok, TeamID: team, ProjectID: project, Source: SourceAccessTokenEnv}, nil
}

func (d *defaultProvider) linkedProject(ctx context.Context) (Credentials, error) {
	if d.opts.Refresher == nil {
		return Credentials{}, ErrNotApplicable
	}
	if lr, ok := d.opts.Refresher.(LinkedRefresher); ok && !d.linked.hasToken() {
		if err := lr.Linked(); err != nil {
			return Credentials{}, notApplicable(err)
		}
	}
	c, err := d.linked.Credentials(ctx)
	return d.oidcResult(ctx, c, err)
}
