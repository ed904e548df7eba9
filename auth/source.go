package auth

import (
	"context"
	"net/http"
	"strings"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Names of the header and environment variables that carry a Vercel OIDC token.
const (
	// HeaderOIDCToken is the request header in which Vercel Functions
	// receive a fresh OIDC token for each request.
	HeaderOIDCToken = "x-vercel-oidc-token"
	// EnvOIDCToken holds an OIDC token, for example from `vercel env pull`.
	EnvOIDCToken = "VERCEL_OIDC_TOKEN"
	// EnvOIDCTokenFile names a file that holds an OIDC token. The file is
	// read again on every call, so it may be rotated while the process runs.
	EnvOIDCTokenFile = "VERCEL_OIDC_TOKEN_FILE"
)

// RawSource reads an OIDC token from somewhere. ok is false when the source
// has no token (which is not an error); err reports a source that is
// configured but broken.
type RawSource func(ctx context.Context) (token string, ok bool, err error)

type oidcContextKey struct{}

// WithOIDCToken returns a copy of ctx that carries an OIDC token, which the
// Default provider then prefers over every ambient source. It is the Go
// counterpart of the per-request x-vercel-oidc-token header.
func WithOIDCToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, oidcContextKey{}, token)
}

// OIDCTokenFromContext returns the token stored by WithOIDCToken or
// Middleware; ok is false when there is none or it is empty.
func OIDCTokenFromContext(ctx context.Context) (token string, ok bool) {
	token, _ = ctx.Value(oidcContextKey{}).(string)
	return token, token != ""
}

// Middleware copies the x-vercel-oidc-token request header, when present,
// into the request context with WithOIDCToken, so that sandbox calls made
// while handling the request use that request's token.
//
// Use it only where the Vercel platform sets the header. Elsewhere a client
// could send a token of its own and have the handler act with it.
//
// A nil next panics at the call, as http.ServeMux.Handle does, rather than
// at the first request.
func Middleware(next http.Handler) http.Handler {
	if next == nil {
		panic("auth: Middleware: next must not be nil")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := strings.TrimSpace(r.Header.Get(HeaderOIDCToken)); tok != "" {
			r = r.WithContext(WithOIDCToken(r.Context(), tok))
		}
		next.ServeHTTP(w, r)
	})
}

// FromContext returns a RawSource that reads the token stored by
// WithOIDCToken or Middleware.
func FromContext() RawSource {
	return func(ctx context.Context) (string, bool, error) {
		tok, ok := OIDCTokenFromContext(ctx)
		return tok, ok, nil
	}
}

// FromEnv returns a RawSource that reads the environment variable name on
// every call; an unset or empty variable gives no token. An empty name
// makes every call fail with an *InputError.
func FromEnv(name string) RawSource {
	if name == "" {
		return invalidSource(apierr.Invalid("name", "empty environment variable name"))
	}
	return fromEnv(name, host.System{})
}

// invalidSource is a RawSource that fails with err: how a constructor
// that returns no error refuses its input.
func invalidSource(err error) RawSource {
	return func(context.Context) (string, bool, error) { return "", false, err }
}

func fromEnv(name string, sys host.System) RawSource {
	return func(context.Context) (string, bool, error) {
		tok := strings.TrimSpace(sys.Env(name))
		return tok, tok != "", nil
	}
}

// FromFile returns a RawSource that reads and trims the file at path on
// every call, so a rotated file is picked up at once. A missing or empty file
// is an error naming the path. An empty path makes every call fail with an
// *InputError.
func FromFile(path string) RawSource {
	if path == "" {
		return invalidSource(apierr.Invalid("path", "empty file path"))
	}
	return fromFile(path, host.OSFS{})
}

func fromFile(path string, fsys host.FS) RawSource {
	return func(context.Context) (string, bool, error) {
		return readTokenFile(fsys, path)
	}
}

// envFileSource reads the file named by VERCEL_OIDC_TOKEN_FILE; no token
// when the variable is unset.
func envFileSource(sys host.System) RawSource {
	return func(context.Context) (string, bool, error) {
		path := sys.Env(EnvOIDCTokenFile)
		if path == "" {
			return "", false, nil
		}
		return readTokenFile(sys.Files(), path)
	}
}

func readTokenFile(fsys host.FS, path string) (string, bool, error) {
	data, err := fsys.ReadFile(path)
	if err != nil {
		return "", false, &errmsg.Error{Msg: "cannot read the Vercel OIDC token file", Cause: err}
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", false, &errmsg.Error{Msg: "The Vercel OIDC token file is empty: " + path}
	}
	return tok, true, nil
}
