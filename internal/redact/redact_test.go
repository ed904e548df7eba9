package redact_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Token-shaped strings, built at run time so that no scanner mistakes this
// file for one holding real credentials.
var (
	jwt       = "eyJhbGciOiJSUzI1NiJ9" + "." + "eyJzdWIiOiJ1c2VyIiwiZXhwIjo5OTk5fQ" + "." + "c2lnbmF0dXJlLWJ5dGVz"
	ghToken   = "ghp" + "_" + strings.Repeat("A1b2C3d4", 5)
	ghPAT     = "github" + "_pat_" + strings.Repeat("x9Y8_", 12)
	awsKey    = "AKIA" + "IOSFODNN7EXAMPLE"
	skKey     = "sk" + "-proj-" + strings.Repeat("Zq7", 10)
	npmToken  = "npm" + "_" + strings.Repeat("n0", 18)
	vercelTok = "vcp" + "_" + strings.Repeat("Vv1", 10)
	slackTok  = "xoxb" + "-1234567890-abcdefghij"
	stripeKey = "sk" + "_live_" + strings.Repeat("s", 24)
	bearerVal = "opaque.token~value/with+chars="
)

func TestIsSecretName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"Authorization", "Proxy-Authorization", "x-vercel-oidc-token", "Cookie", "Set-Cookie",
		"password", "DB_PASSWD", "client_secret", "GITHUB_TOKEN", "X-Api-Key", "api_key",
		"AWS_SECRET_ACCESS_KEY", "accessKeyId", "privateKey", "credentials", "token",
	} {
		assert.True(t, redact.IsSecretName(name), name)
	}
	for _, name := range []string{"Content-Type", "teamId", "projectId", "sessionId", "name", "X-Vercel-Id", "cmd", "env", "headers", ""} {
		assert.False(t, redact.IsSecretName(name), name)
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "", redact.Value(""))
	assert.Equal(t, redact.Marker, redact.Value("tok"))
}

func TestHeaderAndQuery(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"Authorization": {"Bearer " + vercelTok},
		"Cookie":        {"a=b"},
		"Content-Type":  {"application/json"},
	}
	got := redact.Header(h)
	assert.Equal(t, "Bearer [REDACTED]", got.Get("Authorization"))
	assert.Equal(t, "[REDACTED]", got.Get("Cookie"))
	assert.Equal(t, "application/json", got.Get("Content-Type"))
	assert.Equal(t, "Bearer "+vercelTok, h.Get("Authorization"), "the input is left alone")

	q := url.Values{"token": {"abc"}, "teamId": {"team_1"}}
	gq := redact.Query(q)
	assert.Equal(t, url.Values{"token": {"[REDACTED]"}, "teamId": {"team_1"}}, gq)
	assert.Equal(t, "abc", q.Get("token"), "the input is left alone")
	assert.Nil(t, redact.Query(nil))
}

func TestStringShapes(t *testing.T) {
	t.Parallel()
	s := redact.NewSet("hunter2-secret", "")
	cases := []struct{ in, want string }{
		{"password is hunter2-secret!", "password is [REDACTED]!"},
		{"VERCEL_OIDC_TOKEN=" + jwt + "\n", "VERCEL_OIDC_TOKEN=[REDACTED]\n"},
		{"header only eyJhbGciOiJIUzI1NiJ9 here", "header only [REDACTED] here"},
		{"token " + ghToken + " end", "token [REDACTED] end"},
		{"pat=" + ghPAT, "pat=[REDACTED]"},
		{"aws " + awsKey + ".", "aws [REDACTED]."},
		{"key: " + skKey, "key: [REDACTED]"},
		{"//registry.npmjs.org/:_authToken=" + npmToken, "//registry.npmjs.org/:_authToken=[REDACTED]"},
		{"vercel " + vercelTok, "vercel [REDACTED]"},
		{"slack " + slackTok, "slack [REDACTED]"},
		{"stripe " + stripeKey, "stripe [REDACTED]"},
		{"Authorization: Bearer " + bearerVal, "Authorization: Bearer [REDACTED]"},
		{"authorization: bearer\t" + bearerVal, "authorization: bearer\t[REDACTED]"},
		{"Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"},
		{"git clone https://bob:s3cr3t-pass@example.com/r.git", "git clone https://bob:[REDACTED]@example.com/r.git"},
		{"postgres://:pw@db/x", "postgres://:[REDACTED]@db/x"},
		// Not secrets.
		{"task-runner and desk-lamp-something-long-enough", "task-runner and desk-lamp-something-long-enough"},
		{"eyJ alone, AKIA short, sk- short", "eyJ alone, AKIA short, sk- short"},
		{"the bearer of news", "the bearer of news"},
		{"ok  \tgithub.com/x/y\t0.12s", "ok  \tgithub.com/x/y\t0.12s"},
		{"https://example.com/a:b@c", "https://example.com/a:b@c"},
		{"hunter2-secret." + ghToken, "[REDACTED].[REDACTED]"},
		{awsKey, "[REDACTED]"},
		{"BEARER " + bearerVal + "\n", "BEARER [REDACTED]\n"},
		{"x" + awsKey + " " + "my" + skKey, "x" + awsKey + " " + "my" + skKey}, // inside words: not tokens
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, s.String(tc.in), tc.in)
		assert.Equal(t, tc.want, string(s.Bytes([]byte(tc.in))), tc.in)
	}
}

func TestNilSetFindsShapes(t *testing.T) {
	t.Parallel()
	var s *redact.Set
	assert.Equal(t, "a [REDACTED] b", s.String("a "+jwt+" b"))
	assert.Equal(t, "plain", s.String("plain"))
}

func TestOverlappingValues(t *testing.T) {
	t.Parallel()
	s := redact.NewSet("abcabc", "cab", "abcd")
	assert.Equal(t, "x[REDACTED]y", s.String("xabcabcy"))
	assert.Equal(t, "[REDACTED]", s.String("abcabcd"))
	assert.Equal(t, "x[REDACTED]x", s.String("xcabx"))
}

func TestFindReportsShapes(t *testing.T) {
	t.Parallel()
	s := redact.NewSet("known-value")
	text := []byte("a known-value b " + jwt + " c https://u:p4ss@h/")
	var shapes []redact.Shape
	for _, sp := range s.Find(text) {
		shapes = append(shapes, sp.Shape)
	}
	assert.Equal(t, []redact.Shape{redact.ShapeKnown, redact.ShapeJWT, redact.ShapeUserinfo}, shapes)
	last := s.Find(text)[2]
	assert.Equal(t, "p4ss", string(text[last.Start:last.End]), "only the password is hidden")
}

func TestError(t *testing.T) {
	t.Parallel()
	plain := errors.New("connection refused")
	assert.Same(t, plain, redact.Error(plain, redact.NewSet("secret-value-1")), "an error without a secret is kept as it is")
	assert.NoError(t, redact.Error(nil, nil))

	inner := fmt.Errorf("malformed HTTP response %q", "secret-value-1 and "+jwt)
	err := redact.Error(inner, redact.NewSet("secret-value-1"))
	assert.NotContains(t, err.Error(), "secret-value-1")
	assert.NotContains(t, err.Error(), jwt[:20])
	assert.NotContains(t, fmt.Sprintf("%+v", err), "secret-value-1")
	assert.ErrorIs(t, err, inner)
}
