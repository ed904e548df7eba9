package proxy_test

import (
	"testing"
)

// BenchmarkVerify measures the verification of one forwarded request whose
// issuer's key set is cached: header parsing, token parsing, one RS256
// signature check (2048-bit key) and the claims.
func BenchmarkVerify(b *testing.B) {
	e := newEnv(b)
	r := forwarded(e.token(e.claims()))
	if _, err := e.v.Verify(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.v.Verify(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyParallel is BenchmarkVerify from every processor at once,
// all sharing one verifier.
func BenchmarkVerifyParallel(b *testing.B) {
	e := newEnv(b)
	r := forwarded(e.token(e.claims()))
	if _, err := e.v.Verify(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.v.Verify(r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
