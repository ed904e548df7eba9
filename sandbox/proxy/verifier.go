package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

const (
	vercelIssuer   = "https://oidc.vercel.com" // Vercel's global issuer, trusted when no issuer is named
	clockTolerance = 60 * time.Second
	maxTokenBytes  = 16 << 10
)

// Forwarded describes an authenticated forwarded request. The host the
// request reached, which the official SDK reports beside these, is the
// request's Host.
type Forwarded struct {
	// TeamID, ProjectID and SandboxID identify the sandbox that sent the
	// request; SandboxName is its name, or its id when the token names none.
	TeamID, ProjectID, SandboxID, SandboxName string

	// URL is the URL the sandbox requested, rebuilt from the
	// vercel-forwarded-scheme, -host, -port and -path headers, without the
	// scheme's default port.
	URL *url.URL
}

// A Verifier authenticates requests forwarded by a sandbox's network
// policy. It is safe for concurrent use, and starts no goroutine. Create
// one with NewVerifier: a zero or nil Verifier refuses every call.
type Verifier struct {
	origin  string
	invalid func(http.ResponseWriter, *http.Request, error)
	now     func() time.Time
	keys    *keyCache
}

// NewVerifier returns a Verifier configured by opts. A bad option value is
// an *InputError naming the option; nil options are ignored.
func NewVerifier(opts ...Option) (*Verifier, error) {
	c := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if err := c.dialLocalhost(); err != nil {
		return nil, err
	}
	if len(c.issuers) == 0 {
		c.issuers = []string{vercelIssuer}
	}
	return &Verifier{origin: c.origin, invalid: c.invalid, now: c.now, keys: newKeyCache(&c)}, nil
}

// check refuses a nil or zero Verifier, which has no key cache.
func (v *Verifier) check() error {
	if v == nil || v.keys == nil {
		return apierr.Invalid("Verifier", "not made by NewVerifier")
	}
	return nil
}

type contextKey struct{}

// FromContext returns the Forwarded that Verifier.Handler put in the
// context of the request it passed on.
func FromContext(ctx context.Context) (*Forwarded, bool) {
	f, ok := ctx.Value(contextKey{}).(*Forwarded)
	return f, ok
}

// Handler returns a handler that authenticates each request with Verify.
// It passes a valid one to next, and an invalid one to the invalid-request
// handler; either receives a copy of the request without the five
// forwarded headers, and next finds the Forwarded with FromContext. The
// copy keeps the URL and Host it was received with (the official SDK
// rewrites them to the destination): send the request on to
// Forwarded.URL.
//
// A nil next, or a Verifier not made by NewVerifier, panics at the call,
// as http.ServeMux.Handle does, rather than at the first request.
func (v *Verifier) Handler(next http.Handler) http.Handler {
	if next == nil {
		panic("proxy: Verifier.Handler: next must not be nil")
	}
	if err := v.check(); err != nil {
		panic("proxy: Verifier.Handler: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := v.Verify(r)
		ctx := r.Context()
		if err == nil {
			ctx = context.WithValue(ctx, contextKey{}, f)
		}
		out := r.WithContext(ctx)
		out.Header = r.Header.Clone()
		for _, h := range forwardedHeaders {
			delete(out.Header, h)
		}
		if err != nil {
			v.invalid(w, out, err)
			return
		}
		next.ServeHTTP(w, out)
	})
}

// Verify authenticates r and returns what its headers and token say. It
// fetches the issuer's key set when needed, within r's context. It neither
// changes r nor reads its body. Its error matches one of the package's Err
// values, or is an *InputError for a nil r or a Verifier not made by
// NewVerifier.
func (v *Verifier) Verify(r *http.Request) (*Forwarded, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, apierr.Invalid("r", "nil request")
	}
	fr, err := readHeaders(r)
	if err != nil {
		return nil, err
	}
	c, err := v.verifyToken(r.Context(), fr.token, audience(r, v.origin, fr.path))
	if err != nil {
		return nil, err
	}
	f := &Forwarded{
		TeamID:      str(c.TeamID),
		ProjectID:   str(c.ProjectID),
		SandboxID:   str(c.SandboxID),
		SandboxName: str(c.SandboxName),
		URL:         fr.url,
	}
	if f.SandboxName == "" {
		f.SandboxName = f.SandboxID
	}
	switch {
	case f.TeamID == "":
		return nil, fmt.Errorf("%w: team_id", ErrMissingClaims)
	case f.ProjectID == "":
		return nil, fmt.Errorf("%w: project_id", ErrMissingClaims)
	case f.SandboxID == "":
		return nil, fmt.Errorf("%w: sandbox_id", ErrMissingClaims)
	}
	return f, nil
}

// claimSet is the payload of a sandbox token. The claims that the official
// SDK reads only when they are strings are decoded as any, so that another
// type reads as missing there too.
type claimSet struct {
	Issuer      any              `json:"iss"`
	Audience    jwt.Audience     `json:"aud"`
	Expiry      *jwt.NumericDate `json:"exp"`
	NotBefore   *jwt.NumericDate `json:"nbf"`
	IssuedAt    *jwt.NumericDate `json:"iat"` // must be a number, but is not compared with the clock
	TeamID      any              `json:"team_id"`
	ProjectID   any              `json:"project_id"`
	SandboxID   any              `json:"sandbox_id"`
	SandboxName any              `json:"sandbox_name"`
}

// str returns v if it is a string, and "" otherwise.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// verifyToken checks the token's form, issuer, signature and times, and
// that it was issued for aud. The order is the official SDK's: the issuer
// is read from the unverified payload to find the keys, then the signature
// is verified, then the claims are checked. Until the signature is, the
// issuer only selects among the trusted ones.
func (v *Verifier) verifyToken(ctx context.Context, token, aud string) (*claimSet, error) {
	if len(token) > maxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, maxTokenBytes)
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, fmt.Errorf("%w: not a compact JWS signed with RS256", ErrInvalidToken)
	}
	h := jws.Signatures[0].Protected
	if _, ok := h.ExtraHeaders["crit"]; ok {
		return nil, fmt.Errorf("%w: critical header extensions are not supported", ErrInvalidToken)
	}
	if _, ok := h.ExtraHeaders["b64"]; ok {
		return nil, fmt.Errorf("%w: an unencoded payload is not allowed", ErrInvalidToken)
	}
	var c claimSet
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c); err != nil {
		return nil, fmt.Errorf("%w: the payload is not a JSON claims set", ErrInvalidToken)
	}
	iss := str(c.Issuer)
	if !v.keys.trusts(iss) {
		if strings.HasPrefix(iss, vercelIssuer+"/") {
			return nil, fmt.Errorf("%w: a Vercel team issuer not named with WithTrustedIssuer", ErrInvalidIssuer)
		}
		return nil, ErrInvalidIssuer
	}
	key, err := v.keys.key(ctx, iss, h.KeyID)
	if err != nil {
		return nil, err
	}
	if _, err := jws.Verify(key); err != nil {
		return nil, fmt.Errorf("%w: the signature does not verify", ErrInvalidToken)
	}
	if c.Expiry == nil {
		return nil, fmt.Errorf("%w: no exp claim", ErrExpired)
	}
	claims := jwt.Claims{Issuer: iss, Audience: c.Audience, Expiry: c.Expiry, NotBefore: c.NotBefore}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: iss, AnyAudience: jwt.Audience{aud}, Time: v.now()}, clockTolerance)
	switch {
	case err == nil:
		return &c, nil
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, ErrInvalidAudience
	case errors.Is(err, jwt.ErrExpired):
		return nil, ErrExpired
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, ErrNotYetValid
	default:
		return nil, fmt.Errorf("%w: the claims do not validate", ErrInvalidToken)
	}
}
