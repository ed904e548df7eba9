package redact_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// FuzzWriter checks that no known value survives String or a Writer,
// written as it is, JSON-escaped or URL-encoded, however the text is cut
// into writes.
func FuzzWriter(f *testing.F) {
	f.Add("token hunter2 and more", "hunter2", uint8(1), uint8(3))
	f.Add("Authorization: Bearer abcdefghijklmnop\n", "zz", uint8(5), uint8(7))
	f.Add("x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y", "ghp", uint8(2), uint8(2))
	f.Add("https://u:pw@h/ eyJabcdefghij.x", "aaaa", uint8(3), uint8(1))
	f.Add(`{"e":"a\/b\u002bc"} 50% done\`, "tok/en+val=ue&x", uint8(4), uint8(9))
	f.Fuzz(func(t *testing.T, text, secret string, a, b uint8) {
		if len(secret) < 3 || strings.ContainsAny(secret, " \n\x00") {
			return
		}
		s := redact.NewSet(secret)
		forms := []string{secret, url.QueryEscape(secret)}
		if utf8.ValidString(secret) { // else JSON writes U+FFFD for the bad bytes
			b, _ := json.Marshal(secret)
			j := string(b[1 : len(b)-1])
			forms = append(forms, j, strings.ReplaceAll(j, "/", `\/`))
		}
		full := text + " " + secret + "\n" + text + " " + secret
		for _, form := range forms[1:] {
			full += "\n" + text + " " + form
		}
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
			for _, form := range forms {
				if strings.Contains(strings.ReplaceAll(got, redact.Marker, "\x00"), form) {
					t.Fatalf("secret %q survived as %q in %q", secret, form, got)
				}
			}
		}
	})
}
