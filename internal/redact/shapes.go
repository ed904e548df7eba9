package redact

import (
	"bytes"
	"regexp"
)

// MaxTokenLen is the longest token-shaped string (a JWT, a key) that a
// Writer is sure to redact when it arrives split across writes. Known
// values are redacted whatever their length.
const MaxTokenLen = 16 << 10

// Shape names the kind of a token-shaped secret found in text.
type Shape string

// The shapes of token a Set finds. ShapeKnown marks a known value.
const (
	ShapeKnown    Shape = "known"
	ShapeJWT      Shape = "jwt"
	ShapeGitHub   Shape = "github"
	ShapeVercel   Shape = "vercel"
	ShapeNPM      Shape = "npm"
	ShapeAWS      Shape = "aws"
	ShapeAPIKey   Shape = "apikey" // sk-..., Stripe, Slack and Google keys
	ShapeAuth     Shape = "auth"   // the credential after "Bearer " or "Basic "
	ShapeUserinfo Shape = "userinfo"
)

// tokenPattern matches a token-shaped secret. A pattern with a group
// redacts only the group (the credential after "Bearer ", not the word).
// Every pattern begins with one of its needles (compared without case
// when fold is set), at the start of a word unless inner is set; the
// regexp runs only when the text holds a needle, which keeps ordinary
// text off the regexp engine.
type tokenPattern struct {
	shape   Shape
	re      *regexp.Regexp
	needles []string
	fold    bool
	inner   bool
}

// Patterns are compiled once; they are constants in all but syntax.
var tokenPatterns = []tokenPattern{
	// JWT, such as an OIDC token; one segment is enough to say "JWT".
	{shape: ShapeJWT, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_=-]{7,}(?:\.[A-Za-z0-9_=-]*){0,2}`), needles: []string{"eyJ"}},
	{shape: ShapeGitHub, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), needles: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	// Vercel tokens with a type prefix (vcp_, vci_, vca_, ...).
	{shape: ShapeVercel, re: regexp.MustCompile(`\bvc[a-z]_[A-Za-z0-9]{20,}`), needles: []string{"vc"}},
	{shape: ShapeNPM, re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{30,}`), needles: []string{"npm_"}},
	{shape: ShapeAWS, re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b`), needles: []string{"AKIA", "ASIA", "ABIA", "ACCA"}},
	{shape: ShapeAPIKey, re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`), needles: []string{"sk-"}},
	{shape: ShapeAPIKey, re: regexp.MustCompile(`\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}`), needles: []string{"rk_live_", "rk_test_", "sk_live_", "sk_test_", "pk_live_", "pk_test_"}},
	{shape: ShapeAPIKey, re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), needles: []string{"xox"}},
	{shape: ShapeAPIKey, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), needles: []string{"AIza"}},
	{shape: ShapeAuth, re: regexp.MustCompile(`(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/-]{8,}=*)`), needles: []string{"bearer", "basic"}, fold: true},
	// A password in a URL: scheme://user:password@host hides the password.
	{shape: ShapeUserinfo, re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@`), needles: []string{"://"}, inner: true},
}

type needleRef struct {
	needle  string
	fold    bool
	inner   bool
	pattern int
}

// needlesByFirst indexes the needles by their first byte.
var needlesByFirst = func() (t [256][]needleRef) {
	for i, p := range tokenPatterns {
		for _, n := range p.needles {
			ref := needleRef{n, p.fold, p.inner, i}
			t[n[0]] = append(t[n[0]], ref)
			if p.fold {
				up := n[0] &^ 0x20
				t[up] = append(t[up], ref)
			}
		}
	}
	return t
}()

func wordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// candidates returns the set of patterns (bit i for tokenPatterns[i]) that
// may match in b. It does not allocate.
func candidates(b []byte) uint32 {
	var set uint32
	for i := 0; i < len(b); i++ {
		refs := needlesByFirst[b[i]]
		if len(refs) == 0 {
			continue
		}
		inWord := i > 0 && wordChar(b[i-1])
		for _, r := range refs {
			if (inWord && !r.inner) || len(b)-i < len(r.needle) {
				continue
			}
			w := b[i : i+len(r.needle)]
			if string(w) == r.needle || (r.fold && bytes.EqualFold(w, []byte(r.needle))) {
				set |= 1 << r.pattern
			}
		}
	}
	return set
}

// tokenChar reports whether c can be part of a token-shaped secret.
func tokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}
