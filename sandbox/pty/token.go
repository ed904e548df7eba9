package pty

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// The ticket's token is a bearer credential: whoever holds it opens the
// terminal. Errors are built in part from what a server said (a close
// reason, the headers of a handshake that the WebSocket layer quotes), and a
// hostile or careless server may echo the token there, in another case or
// encoding, or cut short. So every text that reaches an error goes through
// tokenText, which hides the token in each of the forms a server may give
// it, compared without case, and any run of minFragment characters of one
// of them (a token cut short, or shifted in a base64 text), besides what
// internal/redact hides (token shapes). internal/redact compares exact
// values only; this widening is the terminal client's, as only it echoes
// a server's words next to a known token.

const (
	// minFragment is the shortest run of a token's form that is hidden: a
	// few characters of a random token say nothing, eight begin to.
	minFragment = 8
	// maxShown bounds a text before it is searched; the rest is cut.
	maxShown = 1 << 10
)

// tokenText hides one token in texts.
type tokenText struct {
	forms []string // the token's forms, ASCII lower case
}

func newTokenText(token string) *tokenText {
	js, _ := json.Marshal(token) // a string always marshals
	var pct strings.Builder
	for i := 0; i < len(token); i++ {
		fmt.Fprintf(&pct, "%%%02x", token[i])
	}
	forms := []string{
		token,
		url.QueryEscape(token),
		url.PathEscape(token),
		pct.String(),
		strings.Trim(string(js), `"`),
		strings.ReplaceAll(strings.Trim(string(js), `"`), "/", `\/`), // as JavaScript may escape it
		strings.Trim(strconv.Quote(token), `"`),                      // as %q quotes it
	}
	// base64 at its three alignments: a token inside a longer encoded
	// text ("user:token") is encoded from another offset.
	for shift := range 3 {
		b := append(make([]byte, shift), token...)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			s := strings.TrimRight(enc.EncodeToString(b), "=")
			// The first characters mix in the bytes before the token, the
			// last one those after it.
			if skip := (shift*8 + 5) / 6; len(s) > skip+1 {
				forms = append(forms, s[skip:len(s)-1])
			}
		}
	}
	t := &tokenText{}
	for _, f := range forms {
		f = lowerASCII(f)
		if f != "" && !slices.Contains(t.forms, f) {
			t.forms = append(t.forms, f)
		}
	}
	return t
}

// lowerASCII lowers ASCII letters only, so that byte offsets are kept.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// find reports whether s may hold the token in any form, or a part of
// it: a text too long to search is taken to.
func (t *tokenText) find(s string) bool {
	if len(s) > maxShown {
		return true
	}
	_, found := t.spans(s)
	return found
}

// spans returns which bytes of s are the token's (marks[i] for s[i]).
func (t *tokenText) spans(s string) (marks []bool, found bool) {
	low := lowerASCII(s)
	for _, f := range t.forms {
		k := min(minFragment, len(f))
		for i := 0; i+k <= len(low); i++ {
			if !strings.Contains(f, low[i:i+k]) {
				continue
			}
			if marks == nil {
				marks = make([]bool, len(s))
			}
			for j := i; j < i+k; j++ {
				marks[j] = true
			}
			found = true
		}
	}
	return marks, found
}

// hide returns s, cut to a bounded length, with the token hidden (each
// run of its bytes replaced by redact.Marker) and the token shapes of
// internal/redact hidden too.
func (t *tokenText) hide(s string) string {
	if len(s) > maxShown {
		s = s[:maxShown] + "…"
	}
	if marks, found := t.spans(s); found {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if !marks[i] {
				b.WriteByte(s[i])
				continue
			}
			b.WriteString(redact.Marker)
			for i+1 < len(s) && marks[i+1] {
				i++
			}
		}
		s = b.String()
	}
	var shapes *redact.Set // the token shapes only
	return shapes.String(s)
}

// err returns err when no error in its tree shows the token. Otherwise it
// returns an error whose message is err's with the token hidden, and whose
// cause is the first error down err's chain that shows nothing of the
// token, if any: errors.Is still finds a context's end or a network
// error, and no error reachable from it holds the token.
func (t *tokenText) err(err error) error {
	if err == nil || t.clean(err) {
		return err
	}
	// A tree's branches are not followed: each may show the token.
	cause := errors.Unwrap(err)
	for cause != nil && !t.clean(cause) {
		cause = errors.Unwrap(cause)
	}
	return &hiddenError{msg: t.hide(err.Error()), cause: cause}
}

// clean reports whether no error in err's tree shows the token.
func (t *tokenText) clean(err error) bool {
	if t.find(err.Error()) || t.find(fmt.Sprintf("%+v", err)) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if c := u.Unwrap(); c != nil {
			return t.clean(c)
		}
	case interface{ Unwrap() []error }:
		for _, c := range u.Unwrap() {
			if c != nil && !t.clean(c) {
				return false
			}
		}
	}
	return true
}

// hiddenError is an error whose message showed the token.
type hiddenError struct {
	msg   string
	cause error
}

func (e *hiddenError) Error() string { return e.msg }
func (e *hiddenError) Unwrap() error { return e.cause }
