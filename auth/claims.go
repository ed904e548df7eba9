package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth/internal/errmsg"
)

// Claims are the parts of a Vercel OIDC token the client uses.
type Claims struct {
	OwnerID     string    // owner_id: the team ID, sent as teamId
	ProjectID   string    // project_id
	Owner       string    // owner: the team slug
	Project     string    // project: the project name
	Environment string    // environment: development, preview or production
	Expiry      time.Time // exp; zero when absent (the token never expires)
	IssuedAt    time.Time // iat; zero when absent
}

// ParseClaims decodes the payload of a Vercel OIDC token without verifying
// its signature; verification is the API's job.
//
// The token must have three dot-separated segments. The payload may use the
// URL or the standard base64 alphabet, with or without padding. It must be a
// JSON object with string owner_id and project_id claims; exp and iat, when
// present, must be numbers (fractions are allowed). Errors match
// ErrInvalidOIDCToken and never contain the token.
func ParseClaims(token string) (Claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, invalidToken("expected 3 dot-separated segments")
	}
	payload, err := decodeSegment(parts[1])
	if err != nil {
		return Claims{}, invalidToken("payload is not base64url")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil || raw == nil {
		return Claims{}, invalidToken("payload is not a JSON object")
	}
	var c Claims
	var ok bool
	if c.OwnerID, ok = stringClaim(raw, "owner_id"); !ok || c.OwnerID == "" {
		return Claims{}, invalidToken("missing string claim owner_id")
	}
	if c.ProjectID, ok = stringClaim(raw, "project_id"); !ok || c.ProjectID == "" {
		return Claims{}, invalidToken("missing string claim project_id")
	}
	c.Owner, _ = stringClaim(raw, "owner")
	c.Project, _ = stringClaim(raw, "project")
	c.Environment, _ = stringClaim(raw, "environment")
	if c.Expiry, ok = timeClaim(raw, "exp"); !ok {
		return Claims{}, invalidToken("claim exp is not a number")
	}
	if c.IssuedAt, ok = timeClaim(raw, "iat"); !ok {
		return Claims{}, invalidToken("claim iat is not a number")
	}
	return c, nil
}

func invalidToken(reason string) error {
	return &errmsg.Error{Msg: "Invalid Vercel OIDC token: " + reason, Sentinel: ErrInvalidOIDCToken}
}

// decodeSegment decodes base64url leniently, as Node's Buffer does: padding
// is optional and the standard alphabet is accepted too.
func decodeSegment(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	return base64.RawURLEncoding.DecodeString(s)
}

// stringClaim returns the string claim key; ok is false when it is absent or
// not a string.
func stringClaim(raw map[string]json.RawMessage, key string) (string, bool) {
	v, present := raw[key]
	if !present {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// timeClaim reads a NumericDate. Absent or null gives the zero time; ok is
// false when the value is not a number.
func timeClaim(raw map[string]json.RawMessage, key string) (time.Time, bool) {
	v, present := raw[key]
	if !present || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return time.Time{}, true
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return time.Time{}, false
	}
	// Keep absurd values inside what time.Time can represent.
	const limit = 1 << 40
	f = math.Max(-limit, math.Min(limit, f))
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}
