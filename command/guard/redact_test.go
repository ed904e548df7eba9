package guard_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command/guard"
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

func TestRedactPatterns(t *testing.T) {
	t.Parallel()
	r := guard.NewRedactor("hunter2-secret", "")
	cases := []struct{ in, want string }{
		{"password is hunter2-secret!", "password is [REDACTED]!"},
		{"VERCEL_OIDC_TOKEN=" + jwt + "\n", "VERCEL_OIDC_TOKEN=[REDACTED]\n"},
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
		// Not secrets.
		{"task-runner and desk-lamp-something-long-enough", "task-runner and desk-lamp-something-long-enough"},
		{"eyJ alone, AKIA short, sk- short", "eyJ alone, AKIA short, sk- short"},
		{"the bearer of news", "the bearer of news"},
		{"ok  \tgithub.com/x/y\t0.12s", "ok  \tgithub.com/x/y\t0.12s"},
		{"hunter2-secret." + ghToken, "[REDACTED].[REDACTED]"},
		{awsKey, "[REDACTED]"},
		{"BEARER " + bearerVal + "\n", "BEARER [REDACTED]\n"},
		{"x" + awsKey + " " + "my" + skKey, "x" + awsKey + " " + "my" + skKey}, // inside words: not tokens
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, r.Redact(tc.in), tc.in)
	}
}

func TestRedactOverlappingLiterals(t *testing.T) {
	t.Parallel()
	r := guard.NewRedactor("abcabc", "cab", "abcd")
	assert.Equal(t, "x[REDACTED]y", r.Redact("xabcabcy"))
	assert.Equal(t, "[REDACTED]", r.Redact("abcabcd"))
	assert.Equal(t, "x[REDACTED]x", r.Redact("xcabx"))
}

func writeChunks(t *testing.T, w *guard.Writer, s string, cuts []int) {
	t.Helper()
	prev := 0
	for _, c := range append(cuts, len(s)) {
		_, err := w.Write([]byte(s[prev:c]))
		require.NoError(t, err)
		prev = c
	}
	require.NoError(t, w.Close())
}

// Every way of cutting a text into two or three writes gives what Redact
// gives for the whole text.
func TestWriterSplitAnywhere(t *testing.T) {
	t.Parallel()
	secret := "multi\nline-secret-value"
	r := guard.NewRedactor(secret, "s3cr3t")
	text := "start s3cr3t; " + secret + " then Bearer " + bearerVal + "\nJWT " + jwt + " and " + ghToken + "\n" + awsKey + " end s3cr3"
	want := r.Redact(text)
	require.NotContains(t, want, "s3cr3t")
	for i := 0; i <= len(text); i++ {
		var out bytes.Buffer
		writeChunks(t, r.Writer(&out), text, []int{i})
		require.Equal(t, want, out.String(), "cut at %d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		a, b := rng.IntN(len(text)+1), rng.IntN(len(text)+1)
		var out bytes.Buffer
		writeChunks(t, r.Writer(&out), text, []int{min(a, b), max(a, b)})
		require.Equal(t, want, out.String(), "cuts at %d, %d", a, b)
	}
}

// Byte-by-byte writes of many secrets: nothing leaks.
func TestWriterByteByByte(t *testing.T) {
	t.Parallel()
	secrets := []string{"alpha-secret-1", "beta-secret-22", "gamma-333"}
	r := guard.NewRedactor(secrets...)
	var sb strings.Builder
	for i := range 200 {
		sb.WriteString("line ")
		sb.WriteString(secrets[i%3])
		sb.WriteString(" tok " + ghToken + "\n")
	}
	var out bytes.Buffer
	w := r.Writer(&out)
	text := sb.String()
	for i := range len(text) {
		_, err := w.Write([]byte{text[i]})
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	assert.Equal(t, r.Redact(text), out.String())
	for _, s := range append(secrets, ghToken) {
		assert.NotContains(t, out.String(), s)
	}
}

// The writer holds back at most the longest secret's length minus one byte
// when the text ends outside a word, and passes the rest on at once.
func TestWriterHoldsBackLittle(t *testing.T) {
	t.Parallel()
	r := guard.NewRedactor("0123456789abcdef") // 16 bytes
	var out bytes.Buffer
	w := r.Writer(&out)
	_, err := w.Write([]byte(strings.Repeat("hello, world! ", 100)))
	require.NoError(t, err)
	assert.LessOrEqual(t, w.Held(), 15)
	assert.GreaterOrEqual(t, out.Len(), 1400-15)

	_, err = w.Write([]byte("012345"))
	require.NoError(t, err)
	assert.LessOrEqual(t, w.Held(), 15)
	_, err = w.Write([]byte("6789abcdef tail"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, 0, w.Held())
	assert.True(t, strings.HasSuffix(out.String(), "! [REDACTED] tail"), out.String()[out.Len()-40:])

	// Without known secrets nothing is held after a separator.
	var out2 bytes.Buffer
	w2 := guard.NewRedactor().Writer(&out2)
	_, _ = w2.Write([]byte("ok github.com/x 0.1s\n"))
	assert.Equal(t, 0, w2.Held())
	assert.Equal(t, "ok github.com/x 0.1s\n", out2.String())
	_, _ = w2.Write([]byte("partial-word"))
	assert.Equal(t, len("partial-word"), w2.Held())
	require.NoError(t, w2.Close())
	assert.Equal(t, "ok github.com/x 0.1s\npartial-word", out2.String())
}

// A token split just after "Bearer " is still recognised.
func TestWriterBearerSplit(t *testing.T) {
	t.Parallel()
	r := guard.NewRedactor()
	var out bytes.Buffer
	w := r.Writer(&out)
	_, _ = w.Write([]byte("curl -H 'Authorization: Bearer "))
	_, _ = w.Write([]byte(bearerVal[:5]))
	_, _ = w.Write([]byte(bearerVal[5:] + "' https://x\n"))
	require.NoError(t, w.Close())
	assert.Equal(t, "curl -H 'Authorization: Bearer [REDACTED]' https://x\n", out.String())
}

// A token longer than MaxTokenLen is redacted through its end, even though
// the writer cannot hold it whole.
func TestWriterHugeToken(t *testing.T) {
	t.Parallel()
	r := guard.NewRedactor()
	huge := "ghp_" + strings.Repeat("a1B2", guard.MaxTokenLen)
	var out bytes.Buffer
	w := r.Writer(&out)
	_, _ = w.Write([]byte("before "))
	for i := 0; i < len(huge); i += 1000 {
		_, err := w.Write([]byte(huge[i:min(i+1000, len(huge))]))
		require.NoError(t, err)
		require.LessOrEqual(t, w.Held(), guard.MaxTokenLen+1000)
	}
	_, _ = w.Write([]byte(" after\n"))
	require.NoError(t, w.Close())
	got := out.String()
	if len(got) > 200 {
		got = got[:200] + "…"
	}
	assert.Equal(t, "before [REDACTED] after\n", got)
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterErrors(t *testing.T) {
	t.Parallel()
	fw := &failWriter{}
	w := guard.NewRedactor().Writer(fw)
	_, err := w.Write([]byte("hello world\n"))
	assert.EqualError(t, err, "disk full")
	_, err = w.Write([]byte("again\n"))
	assert.EqualError(t, err, "disk full")
	assert.Equal(t, 1, fw.n)
	assert.EqualError(t, w.Close(), "disk full")

	var out bytes.Buffer
	w = guard.NewRedactor().Writer(&out)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	_, err = w.Write([]byte("late"))
	assert.Error(t, err)
}

func BenchmarkRedactWriter(b *testing.B) {
	r := guard.NewRedactor("hunter2-secret", "another-secret-value")
	line := []byte("=== RUN   TestSomething/with_a_subtest\n--- PASS: TestSomething (0.00s) ok github.com/x/y 0.123s\n")
	chunk := bytes.Repeat(line, 4096/len(line))
	b.SetBytes(int64(len(chunk)))
	w := r.Writer(discard{})
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
	_ = w.Close()
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
