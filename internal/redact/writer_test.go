package redact_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

func writeChunks(t *testing.T, w *redact.Writer, s string, cuts []int) {
	t.Helper()
	prev := 0
	for _, c := range append(cuts, len(s)) {
		_, err := w.Write([]byte(s[prev:c]))
		require.NoError(t, err)
		prev = c
	}
	require.NoError(t, w.Close())
}

// Every way of cutting a text into two or three writes gives what String
// gives for the whole text.
func TestWriterSplitAnywhere(t *testing.T) {
	t.Parallel()
	secret := "multi\nline-secret-value"
	s := redact.NewSet(secret, "s3cr3t")
	text := "start s3cr3t; " + secret + " then Bearer " + bearerVal + "\nJWT " + jwt + " and " + ghToken + "\n" + awsKey +
		" git clone https://bob:pa55-w0rd@example.com/r.git at 12:30 end s3cr3"
	want := s.String(text)
	require.NotContains(t, want, "s3cr3t")
	require.NotContains(t, want, "pa55")
	for i := 0; i <= len(text); i++ {
		var out bytes.Buffer
		writeChunks(t, redact.NewWriter(&out, s), text, []int{i})
		require.Equal(t, want, out.String(), "cut at %d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		a, b := rng.IntN(len(text)+1), rng.IntN(len(text)+1)
		var out bytes.Buffer
		writeChunks(t, redact.NewWriter(&out, s), text, []int{min(a, b), max(a, b)})
		require.Equal(t, want, out.String(), "cuts at %d, %d", a, b)
	}
}

// Byte-by-byte writes of many secrets: nothing leaks.
func TestWriterByteByByte(t *testing.T) {
	t.Parallel()
	secrets := []string{"alpha-secret-1", "beta-secret-22", "gamma-333"}
	s := redact.NewSet(secrets...)
	var sb strings.Builder
	for i := range 200 {
		sb.WriteString("line ")
		sb.WriteString(secrets[i%3])
		sb.WriteString(" tok " + ghToken + "\n")
	}
	var out bytes.Buffer
	w := redact.NewWriter(&out, s)
	text := sb.String()
	for i := range len(text) {
		_, err := w.Write([]byte{text[i]})
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	assert.Equal(t, s.String(text), out.String())
	for _, sec := range append(secrets, ghToken) {
		assert.NotContains(t, out.String(), sec)
	}
}

// The writer holds back at most the longest value's length minus one byte
// when the text ends outside a word, and passes the rest on at once.
func TestWriterHoldsBackLittle(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := redact.NewWriter(&out, redact.NewSet("0123456789abcdef")) // 16 bytes
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

	// Without known values nothing is held after a separator.
	var out2 bytes.Buffer
	w2 := redact.NewWriter(&out2, nil)
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
	var out bytes.Buffer
	w := redact.NewWriter(&out, nil)
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
	huge := "ghp_" + strings.Repeat("a1B2", redact.MaxTokenLen)
	var out bytes.Buffer
	w := redact.NewWriter(&out, nil)
	_, _ = w.Write([]byte("before "))
	for i := 0; i < len(huge); i += 1000 {
		_, err := w.Write([]byte(huge[i:min(i+1000, len(huge))]))
		require.NoError(t, err)
		require.LessOrEqual(t, w.Held(), redact.MaxTokenLen+1000)
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

func (f *failWriter) Write([]byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterErrors(t *testing.T) {
	t.Parallel()
	fw := &failWriter{}
	w := redact.NewWriter(fw, nil)
	_, err := w.Write([]byte("hello world\n"))
	assert.EqualError(t, err, "disk full")
	_, err = w.Write([]byte("again\n"))
	assert.EqualError(t, err, "disk full")
	assert.Equal(t, 1, fw.n)
	assert.EqualError(t, w.Close(), "disk full")

	var out bytes.Buffer
	w = redact.NewWriter(&out, nil)
	require.NoError(t, w.Close())
	require.NoError(t, w.Close())
	_, err = w.Write([]byte("late"))
	assert.Error(t, err)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Ordinary output goes through a warm Writer without allocating.
func TestWriterFastPathDoesNotAllocate(t *testing.T) { //nolint:paralleltest // AllocsPerRun
	line := []byte("=== RUN   TestSomething/with_a_subtest\n--- PASS: TestSomething (0.00s) ok github.com/x/y 0.123s\n")
	w := redact.NewWriter(discard{}, redact.NewSet("hunter2-secret", "another-secret-value"))
	_, _ = w.Write(line)
	allocs := testing.AllocsPerRun(100, func() { _, _ = w.Write(line) })
	assert.Zero(t, allocs)
}

func BenchmarkWriter(b *testing.B) {
	line := []byte("=== RUN   TestSomething/with_a_subtest\n--- PASS: TestSomething (0.00s) ok github.com/x/y 0.123s\n")
	chunk := bytes.Repeat(line, 4096/len(line))
	b.SetBytes(int64(len(chunk)))
	w := redact.NewWriter(discard{}, redact.NewSet("hunter2-secret", "another-secret-value"))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
	_ = w.Close()
}

// A password in a URL is redacted wherever the URL is cut.
func TestWriterURLPasswordSplit(t *testing.T) {
	t.Parallel()
	text := "git clone https://bob:pa55-w0rd@example.com/r.git\nat 12:30 done"
	want := "git clone https://bob:[REDACTED]@example.com/r.git\nat 12:30 done"
	require.Equal(t, want, redact.NewSet().String(text))
	for i := 0; i <= len(text); i++ {
		var out bytes.Buffer
		writeChunks(t, redact.NewWriter(&out, nil), text, []int{i})
		require.Equal(t, want, out.String(), "cut at %d", i)
	}
}
