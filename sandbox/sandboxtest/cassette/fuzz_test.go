package cassette

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzNormalizeRoundTrip checks that what a replay makes of a normalised
// string normalises back to the same text (redacted secrets aside), and
// that text without volatile
// values or secrets survives unchanged ("{{" included).
func FuzzNormalizeRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", "{{", "{{lb}}", "a {{session:1}} b", "sbx_abcd1234/cmd_efgh5678", "x sbx_abcd1234 {{ y", "https://u:p@h/x", "eyJhbGciOi.eyJ.sig"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rec := newNormalizer(100, nil, nil)
		norm := rec.str(s)
		play := newNormalizer(100, nil, nil)
		out := play.expand(norm)
		redacted := strings.Contains(norm, phSecret) || strings.Contains(norm, phJWT)
		if again := play.str(out); again != norm && !redacted {
			t.Fatalf("str(%q) = %q; replayed as %q, which normalises to %q", s, norm, out, again)
		}
		volatile := false
		for _, marker := range []string{"sbx_", "cmd_", "snap_", "eyJ", "://"} {
			volatile = volatile || strings.Contains(s, marker)
		}
		if !volatile && out != s {
			t.Fatalf("%q normalised to %q and replayed as %q", s, norm, out)
		}
	})
}

// FuzzDecode checks that no file makes the reader panic, and that what it
// accepts it writes back in a form it reads the same way.
func FuzzDecode(f *testing.F) {
	hdr := `{"format":"sandboxtest-cassette","version":1,"resolutionMs":100}` + "\n"
	f.Add(hdr)
	f.Add(hdr + `{"seq":1,"request":{"method":"GET","path":"/"},"response":{"status":200,"stream":{"frames":1,"end":"eof"}}}` + "\n" + `{"seq":1,"frame":1,"at":0,"text":"x"}` + "\n")
	f.Add(hdr + `{"seq":2,"request":{"method":"POST","path":"/v2/x","body":{"json":{"a":[1,"{{lb}}"]}}},"error":"boom"}` + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		its, err := decode(strings.NewReader(text))
		if err != nil {
			return
		}
		var a bytes.Buffer
		if err := encode(&a, 100, its); err != nil {
			return // e.g. a json field holding invalid JSON
		}
		back, err := decode(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("re-reading what was written: %v\n%s", err, a.String())
		}
		var b bytes.Buffer
		if err := encode(&b, 100, back); err != nil || a.String() != b.String() {
			t.Fatalf("not stable: %v\n%s\n%s", err, a.String(), b.String())
		}
	})
}
