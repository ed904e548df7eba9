// Package authtest helps test code that uses package auth: it builds
// unsigned Vercel OIDC tokens, provides a clock that moves only when told
// (for auth.OIDCOptions.Clock), and fakes the endpoint that mints tokens.
package authtest

import (
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"
)

// MakeJWT returns an unsigned JWT (header.payload.signature) whose payload
// is claims encoded as JSON. The client never verifies signatures, so such a
// token is accepted wherever a Vercel OIDC token is. It panics if claims
// cannot be encoded.
func MakeJWT(claims map[string]any) string {
	payload, err := json.Marshal(claims)
	if err != nil {
		panic("authtest: cannot encode claims: " + err.Error())
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		enc.EncodeToString(payload) + "." +
		enc.EncodeToString([]byte("test-signature"))
}

// Token returns an OIDC token for teamID and projectID that expires at exp;
// a zero exp gives a token without an exp claim.
func Token(teamID, projectID string, exp time.Time) string {
	claims := map[string]any{
		"owner_id":    teamID,
		"project_id":  projectID,
		"owner":       "team-slug",
		"project":     "project-name",
		"environment": "development",
	}
	if !exp.IsZero() {
		claims["exp"] = exp.Unix()
		claims["iat"] = exp.Add(-12 * time.Hour).Unix()
	}
	return MakeJWT(claims)
}

// Clock is a fake clock that is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads t until moved.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
