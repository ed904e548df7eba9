// Package redact is the one definition of a secret in this module: the
// names of headers, fields and query parameters that hold one, the shapes
// of tokens (JWTs, Vercel, GitHub, npm, cloud and API keys, Bearer and
// Basic credentials, passwords in URLs), and exact known values. Every
// place that hides secrets (errors, logs, request records, recordings,
// command output) asks this package, so a new token format is taught once.
package redact

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
)

// Marker replaces every secret.
const Marker = "[REDACTED]"

// secretWords are the words that make a name secret. Names are compared in
// lower case with "_" and "-" removed, so "X-Api-Key", "GITHUB_TOKEN" and
// "Set-Cookie" all match.
var secretWords = []string{
	"authorization", "token", "secret", "cookie", "password", "passwd",
	"apikey", "credential", "privatekey", "accesskey",
}

// IsSecretName reports whether a header, JSON field, query parameter or
// environment variable called name holds a secret.
func IsSecretName(name string) bool {
	// Lower-cased without "_" and "-", in a stack buffer for ordinary names:
	// this runs for every header of every request a server records.
	var buf [64]byte
	n := buf[:0]
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '_' || c == '-':
		case 'A' <= c && c <= 'Z':
			n = append(n, c+'a'-'A')
		default:
			n = append(n, c)
		}
	}
	for _, w := range secretWords {
		if bytes.Contains(n, []byte(w)) {
			return true
		}
	}
	return false
}

// Value returns Marker for a non-empty secret and "" for an empty one, so
// that a printed value still says whether it was set.
func Value(secret string) string {
	if secret == "" {
		return ""
	}
	return Marker
}

// HeaderValue returns value with the secret hidden if the header called
// name holds one. An Authorization value keeps its scheme ("Bearer
// [REDACTED]").
func HeaderValue(name, value string) string {
	if !IsSecretName(name) {
		return value
	}
	if scheme, _, ok := strings.Cut(value, " "); ok && strings.EqualFold(name, "Authorization") {
		return scheme + " " + Marker
	}
	return Marker
}

// Header returns a copy of h with the values of secret headers hidden.
func Header(h http.Header) http.Header {
	out := h.Clone()
	for k, vs := range out {
		if !IsSecretName(k) {
			continue
		}
		red := make([]string, len(vs))
		for i, v := range vs {
			red[i] = HeaderValue(k, v)
		}
		out[k] = red
	}
	return out
}

// Query returns a copy of q with the values of secret parameters hidden.
func Query(q url.Values) url.Values {
	if q == nil {
		return nil
	}
	out := make(url.Values, len(q))
	for k, vs := range q {
		vs = append([]string(nil), vs...)
		if IsSecretName(k) {
			for i := range vs {
				vs[i] = Marker
			}
		}
		out[k] = vs
	}
	return out
}
