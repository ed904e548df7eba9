package redact_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// escaped is a secret with characters that JSON, URLs and quoting write
// otherwise.
const escaped = "s3cr3t/v4lue+x=y&z"

// encodings returns the ways a server or a program may write secret.
func encodings(secret string) map[string]string {
	jsonOf := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	every := func(format string) string {
		var b strings.Builder
		for i := 0; i < len(secret); i++ {
			fmt.Fprintf(&b, format, secret[i])
		}
		return b.String()
	}
	return map[string]string{
		"raw":                  secret,
		"JSON":                 jsonOf(secret),
		"JSON with \\/":        strings.ReplaceAll(jsonOf(secret), "/", `\/`),
		"JSON \\u002b":         strings.ReplaceAll(secret, "+", `\u002b`),
		"JSON \\u002B":         strings.ReplaceAll(secret, "+", `\u002B`),
		"JSON, every byte":     every(`\u%04x`),
		"JSON twice":           jsonOf(jsonOf(secret)),
		"query escaped":        url.QueryEscape(secret),
		"path escaped":         url.PathEscape(secret),
		"lower-case hex":       strings.ToLower(url.QueryEscape(secret)),
		"URL, every byte":      every("%%%02X"),
		"JSON in a URL":        url.QueryEscape(strings.ReplaceAll(jsonOf(secret), "/", `\/`)),
		"\\x escapes":          every(`\x%02x`),
		"split by one escape":  strings.Replace(secret, "v", `\u0076`, 1),
		"split by two escapes": strings.Replace(strings.Replace(secret, "3", "%33", 1), "l", `\u006c`, 1),
	}
}

// A known value is found however it is written: as it is, JSON-escaped,
// URL-encoded, or both, and whole, not up to the first escape.
func TestKnownValueInEveryEncoding(t *testing.T) {
	t.Parallel()
	s := redact.NewSet(escaped)
	for name, form := range encodings(escaped) {
		in := "before " + form + " after"
		assert.Equal(t, "before [REDACTED] after", s.String(in), "%s: %s", name, form)
	}
	// Escapes that spell nothing secret are left alone.
	for _, plain := range []string{`C:\new\tab`, "100% done", `a\u0041b`, "%zz", `\`, "%", `"quoted \"text\""`} {
		assert.Equal(t, plain, s.String(plain))
	}
}

// A token shape is found with escapes decoded, so that the part after the
// first escape does not survive.
func TestTokenShapeWithEscapes(t *testing.T) {
	t.Parallel()
	bearer := "abcdefghij/klmnop+qrst=="
	for _, in := range []string{
		"Authorization: Bearer " + strings.ReplaceAll(bearer, "/", `\/`),
		"Authorization: Bearer " + strings.ReplaceAll(bearer, "+", `\u002b`),
		"Authorization: Bearer " + url.QueryEscape(bearer),
	} {
		assert.Equal(t, "Authorization: Bearer [REDACTED]", redact.NewSet().String(in), in)
	}
	dot := strings.LastIndexByte(jwt, '.')
	esc := jwt[:dot] + `\u002e` + jwt[dot+1:] // the signature after an escape
	assert.Equal(t, "jwt [REDACTED] end", redact.NewSet().String("jwt "+esc+" end"))
}

// A Writer redacts an escaped value however it is cut into writes, even
// inside an escape.
func TestWriterEscapedSplitAnywhere(t *testing.T) {
	t.Parallel()
	s := redact.NewSet(escaped)
	var text, want strings.Builder
	for _, form := range encodings(escaped) {
		text.WriteString("k=" + form + "\n")
		want.WriteString("k=[REDACTED]\n")
	}
	in := text.String()
	require.Equal(t, want.String(), s.String(in))
	for i := 0; i <= len(in); i++ {
		var out bytes.Buffer
		writeChunks(t, redact.NewWriter(&out, s), in, []int{i})
		require.Equal(t, want.String(), out.String(), "cut at %d", i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		a, b := rng.IntN(len(in)+1), rng.IntN(len(in)+1)
		var out bytes.Buffer
		writeChunks(t, redact.NewWriter(&out, s), in, []int{min(a, b), max(a, b)})
		require.Equal(t, want.String(), out.String(), "cuts at %d, %d", a, b)
	}
}

// A Writer holds back only what may begin a known value, so output that
// cannot does not wait for the next write.
func TestWriterHoldsOnlyAPossibleStart(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := redact.NewWriter(&out, redact.NewSet("0123456789abcdef"))
	_, err := w.Write([]byte("hello, world!\n"))
	require.NoError(t, err)
	assert.Zero(t, w.Held())
	assert.Equal(t, "hello, world!\n", out.String())

	_, err = w.Write([]byte("count: 0123"))
	require.NoError(t, err)
	assert.Equal(t, len("0123"), w.Held(), "the start of the value")
	_, err = w.Write([]byte("4 is not it; 01"))
	require.NoError(t, err)
	assert.Equal(t, len("01"), w.Held())
	_, err = w.Write([]byte("23456789abcdef!"))
	require.NoError(t, err)
	assert.Zero(t, w.Held())
	require.NoError(t, w.Close())
	assert.Equal(t, "hello, world!\ncount: 01234 is not it; [REDACTED]!", out.String())
}
