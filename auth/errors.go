package auth

import (
	"errors"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotApplicable is returned by a provider that has nothing to offer
	// (for example no token is configured), so that Chain tries the next one.
	ErrNotApplicable = errors.New("credential provider not applicable")

	// ErrMissingParams matches *MissingParamsError and *MissingEnvError.
	ErrMissingParams = errors.New("missing credentials parameters")

	// ErrInvalidOIDCToken matches every error of ParseClaims: the token is
	// not a JWT or lacks the owner_id or project_id claim.
	ErrInvalidOIDCToken = errors.New("invalid Vercel OIDC token")

	// ErrRefreshFailed is returned when a token is past its expiry and could
	// not be refreshed. It wraps the refresher's error.
	ErrRefreshFailed = errors.New("OIDC token expired and could not be refreshed")

	// ErrLocalOIDCContext matches the guidance error returned when no
	// credentials were found outside Vercel (VERCEL_URL unset).
	ErrLocalOIDCContext = errors.New("no credentials from OIDC context (local)")

	// ErrVercelOIDCContext matches the guidance error returned when no
	// credentials were found on Vercel (VERCEL_URL set).
	ErrVercelOIDCContext = errors.New("no credentials from OIDC context (on Vercel)")

	// ErrInvalidInput matches an *InputError. It is sandbox.ErrInvalidInput.
	ErrInvalidInput = apierr.ErrInvalidInput
)

// InputError is a nil or malformed argument, refused before any request:
// a nil provider in Chain, a nil ProviderFunc or RefresherFunc, an
// OIDCOptions with neither Source nor Refresher, an empty name for FromEnv
// or FromFile. It is sandbox.InputError; Field names the argument.
//
// A constructor that returns no error (Chain, NewOIDCProvider, FromEnv,
// FromFile) reports it from what it returns, at its first call, which
// comes before any request. Middleware, whose http.Handler has no error to
// give but to the HTTP client, panics at the call instead, as
// http.ServeMux.Handle does.
type InputError = sandboxerr.InputError

// MissingParamsError reports explicit credentials given only in part. Its
// message is the one of the TypeScript SDK.
type MissingParamsError struct {
	// Missing names the absent parameters, in the order token, teamId,
	// projectId.
	Missing []string
}

// Error returns the TypeScript SDK message, naming the missing parameters.
func (e *MissingParamsError) Error() string {
	return "Missing credentials parameters to access the Vercel API: " + strings.Join(e.Missing, ", ")
}

// Is reports whether target is ErrMissingParams.
func (e *MissingParamsError) Is(target error) bool { return target == ErrMissingParams }

// MissingEnvError reports that VERCEL_TOKEN is set but VERCEL_TEAM_ID or
// VERCEL_PROJECT_ID is not.
type MissingEnvError struct {
	// Missing names the absent environment variables.
	Missing []string
}

// Error names the missing environment variables.
func (e *MissingEnvError) Error() string {
	return "VERCEL_TOKEN is set, but these are not: " + strings.Join(e.Missing, ", ") +
		" (VERCEL_ORG_ID is accepted for VERCEL_TEAM_ID)"
}

// Is reports whether target is ErrMissingParams.
func (e *MissingEnvError) Is(target error) bool { return target == ErrMissingParams }

const (
	localOIDCMessage = "Could not get credentials from OIDC context.\n" +
		"Please link your Vercel project using `npx vercel link`.\n" +
		"Then, pull an initial OIDC token with `npx vercel env pull`\n" +
		"and retry.\n" +
		"╰▶ Make sure you are loading `.env.local` correctly, or passing $VERCEL_OIDC_TOKEN directly."
	vercelOIDCMessage = "Could not get credentials from OIDC context.\n" +
		"Please make sure OIDC is set up for your project\n" +
		"╰▶ Docs: https://vercel.com/docs/oidc"
)

// OIDCContextError is the guidance error returned when no credentials could
// be found or minted. Its message starts with the text of the TypeScript SDK;
// Cause says what actually went wrong.
//
// It matches ErrVercelOIDCContext when OnVercel is set (the VERCEL_URL
// environment variable was set), and ErrLocalOIDCContext otherwise.
type OIDCContextError struct {
	OnVercel bool
	Cause    error
}

// Error returns the TypeScript SDK guidance text followed by the cause.
func (e *OIDCContextError) Error() string {
	msg := localOIDCMessage
	if e.OnVercel {
		msg = vercelOIDCMessage
	}
	if e.Cause != nil {
		msg += "\nCause: " + e.Cause.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *OIDCContextError) Unwrap() error { return e.Cause }

// Is matches ErrVercelOIDCContext or ErrLocalOIDCContext.
func (e *OIDCContextError) Is(target error) bool {
	if e.OnVercel {
		return target == ErrVercelOIDCContext
	}
	return target == ErrLocalOIDCContext
}
