package proxy_test

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"strings"
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

// BenchmarkSignatureOnly is the baseline of BenchmarkVerify: the RS256
// check of the same token with crypto/rsa alone, nothing parsed.
func BenchmarkSignatureOnly(b *testing.B) {
	e := newEnv(b)
	token := e.token(e.claims())
	dot := strings.LastIndexByte(token, '.')
	sig, err := base64.RawURLEncoding.DecodeString(token[dot+1:])
	if err != nil {
		b.Fatal(err)
	}
	pub := &rsaKeys()[0].PublicKey
	b.ReportAllocs()
	for b.Loop() {
		sum := sha256.Sum256([]byte(token[:dot]))
		if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
			b.Fatal(err)
		}
	}
}
