// Package redact is the one definition of a secret in this module: the
// names of headers, fields and query parameters that hold one, the shapes
// of tokens (JWTs, Vercel, GitHub, npm, cloud and API keys, Bearer and
// Basic credentials, passwords in URLs), and exact known values. Every
// place that hides secrets (errors, logs, request records, recordings,
// command output) asks this package, so a new token format is taught once.
package redact

import (
	"net/http"
	"net/url"
	"strings"
)

// Marker replaces every secret.
const Marker = "[REDACTED]"

// A name is read as words: it is cut at every character that is not an
// ASCII letter or digit, between a lower-case letter and an upper-case one
// ("apiKey"), before the last capital of a run followed by lower case
// ("APIKey") and between letters and digits ("OAUTH2"). Words are compared
// in lower case. A name is secret when one of its words, or two
// neighbouring words joined ("CONNECTION_STRING"), says so:
//
//   - secretWords must be the whole word: "GH_PAT" and "DB_PASS" are
//     secret, "PATH" and "BYPASS" are not;
//   - qualifiedWords must be the whole word of a name of more than one
//     word: "API_KEY" and "MYSQL_PWD" are secret, but "key" alone names
//     the key of a key-value pair and "PWD" the working directory;
//   - secretEndings may also end a word, so that glued names count
//     ("accesstoken", "clientsecret", "dbpassword") while "TOKENIZERS"
//     and "SECRETARY" do not.
//
// Left out on purpose: "session" (sessionId is an id), "cert" (a
// certificate is public; its key is caught by "key"), and "tokens" (an LLM
// token count such as MAX_TOKENS, whose value would then be hidden
// wherever it appears).
var (
	secretWords    = []string{"pat", "pass", "dsn", "auth", "creds", "private", "apikey", "accesskey", "privatekey", "secretkey"}
	qualifiedWords = []string{"key", "pwd"}
	secretEndings  = []string{
		"token", "secret", "secrets", "password", "passwords", "passwd", "passphrase",
		"credential", "credentials", "cookie", "cookies", "authorization", "connectionstring",
	}
)

// IsSecretName reports whether a header, JSON field, query parameter or
// environment variable called name holds a secret.
func IsSecretName(name string) bool {
	// The name in lower case without separators, and where its words
	// begin, in stack buffers for ordinary names: this runs for every
	// header of every request a server records.
	var (
		lowBuf   [64]byte
		startBuf [16]int
	)
	low, starts := lowBuf[:0], startBuf[:0]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) {
			continue
		}
		if i == 0 || !isAlnum(name[i-1]) || wordStart(name, i) {
			starts = append(starts, len(low))
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		low = append(low, c)
	}
	word := func(k int) []byte {
		if k+1 < len(starts) {
			return low[starts[k]:starts[k+1]]
		}
		return low[starts[k]:]
	}
	for k := range starts {
		w := word(k)
		if isOneOf(w, secretWords) || len(starts) > 1 && isOneOf(w, qualifiedWords) || endsWithOneOf(w, secretEndings) {
			return true
		}
		// Two words joined: word(k) and word(k+1) are adjacent in low.
		if k+1 < len(starts) && endsWithOneOf(low[starts[k]:starts[k]+len(w)+len(word(k+1))], secretEndings) {
			return true
		}
	}
	return false
}

// wordStart reports whether name[i], which follows a letter or digit,
// begins a word: a capital after a lower-case letter, the last capital of
// a run before a lower-case letter, or a change between letter and digit.
func wordStart(name string, i int) bool {
	prev, c := name[i-1], name[i]
	switch {
	case isDigit(prev) != isDigit(c):
		return true
	case isUpper(c) && !isUpper(prev):
		return true
	case isUpper(c) && isUpper(prev):
		return i+1 < len(name) && isLower(name[i+1])
	}
	return false
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isUpper(c) || isLower(c) || isDigit(c) }

func isOneOf(w []byte, words []string) bool {
	for _, s := range words {
		if string(w) == s {
			return true
		}
	}
	return false
}

func endsWithOneOf(w []byte, words []string) bool {
	for _, s := range words {
		if len(w) >= len(s) && string(w[len(w)-len(s):]) == s {
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
