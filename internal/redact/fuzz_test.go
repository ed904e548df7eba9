package redact_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// FuzzWriter checks that no known value survives String or a Writer,
// however the text is cut into writes, and that both agree.
func FuzzWriter(f *testing.F) {
	f.Add("token hunter2 and more", "hunter2", uint8(1), uint8(3))
	f.Add("Authorization: Bearer abcdefghijklmnop\n", "zz", uint8(5), uint8(7))
	f.Add("x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y", "ghp", uint8(2), uint8(2))
	f.Add("https://u:pw@h/ eyJabcdefghij.x", "aaaa", uint8(3), uint8(1))
	f.Fuzz(func(t *testing.T, text, secret string, a, b uint8) {
		if len(secret) < 3 || strings.ContainsAny(secret, " \n\x00") {
			return
		}
		s := redact.NewSet(secret)
		full := text + " " + secret + "\n" + text + " " + secret
		var out bytes.Buffer
		w := redact.NewWriter(&out, s)
		sizes := []int{int(a)%17 + 1, int(b)%13 + 1}
		for i, k := 0, 0; i < len(full); k++ {
			n := min(sizes[k%2], len(full)-i)
			if _, err := w.Write([]byte(full[i : i+n])); err != nil {
				t.Fatal(err)
			}
			i += n
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// Markers become NUL so that a secret spelled partly by a marker
		// ("ACT") is not mistaken for a leak.
		for _, got := range []string{out.String(), s.String(full)} {
			if strings.Contains(strings.ReplaceAll(got, redact.Marker, "\x00"), secret) {
				t.Fatalf("secret %q survived in %q", secret, got)
			}
		}
	})
}
