package proxy

import (
	"errors"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
)

// ErrInvalidInput matches an *InputError. It is sandbox.ErrInvalidInput.
var ErrInvalidInput = apierr.ErrInvalidInput

// InputError is a bad argument, refused before anything is fetched or
// served: an option given a bad value (Field names the option), a nil
// request, or a Verifier not made by NewVerifier. It is
// sandbox.InputError.
type InputError = sandboxerr.InputError

// The errors that Verify returns and the invalid-request handler receives,
// each wrapped with a short reason. Match them with errors.Is. None of them
// contains any part of the token.
var (
	// ErrMissingToken: the vercel-sandbox-oidc-token header is absent or
	// empty, as on any request that no network policy forwarded.
	ErrMissingToken = errors.New("proxy: no vercel-sandbox-oidc-token header")

	// ErrMissingHeader: a vercel-forwarded-host, -scheme, -port or -path
	// header is absent or empty.
	ErrMissingHeader = errors.New("proxy: missing forwarded header")

	// ErrInvalidHeader: a forwarded header is repeated, or the four of them
	// do not form an http or https URL.
	ErrInvalidHeader = errors.New("proxy: invalid forwarded header")

	// ErrInvalidToken: the token is not a compact JWS signed with RS256,
	// its signature does not verify, or its claims are not JSON of the
	// right types.
	ErrInvalidToken = errors.New("proxy: invalid token")

	// ErrInvalidIssuer: the token's issuer is not one the verifier trusts:
	// Vercel's global issuer, or those named with WithTrustedIssuer instead.
	// Nothing is fetched for it.
	ErrInvalidIssuer = errors.New("proxy: untrusted token issuer")

	// ErrInvalidAudience: the token was issued for another forward URL.
	ErrInvalidAudience = errors.New("proxy: token issued for another audience")

	// ErrExpired: the token expired more than the clock tolerance ago, or
	// has no expiry.
	ErrExpired = errors.New("proxy: token expired")

	// ErrNotYetValid: the token's nbf is further ahead than the clock
	// tolerance.
	ErrNotYetValid = errors.New("proxy: token not yet valid")

	// ErrUnknownKey: no key of the issuer's key set matches the token, even
	// after fetching the set again (or when the set was fetched too
	// recently to fetch it again).
	ErrUnknownKey = errors.New("proxy: no matching key in the issuer's key set")

	// ErrKeySetUnavailable: the issuer's key set could not be fetched or
	// read, or may not be fetched yet (see WithRefreshInterval).
	ErrKeySetUnavailable = errors.New("proxy: issuer's key set unavailable")

	// ErrMissingClaims: the token lacks the team_id, project_id or
	// sandbox_id claim, or one is not a non-empty string.
	ErrMissingClaims = errors.New("proxy: token lacks a required claim")
)
