package fault

import (
	"net/http"
	"strconv"
	"strings"
)

// maxExpiredTokens bounds the tokens an injector remembers as expired, so
// that its memory stays bounded however many a test expires; the oldest
// is forgotten first.
const maxExpiredTokens = 1024

// expiredTokenBody is hosted Vercel's answer to an expired token
// (vercel/sandbox#192, #247), which the client's credential refresh
// recognises by invalidToken.
const expiredTokenBody = `{"error":{"code":"forbidden","message":"Not authorized","invalidToken":true}}`

// bearer returns the bearer token of r, or "".
func bearer(r *http.Request) string {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// expireToken marks tok expired by the fault described by text.
func (in *Injector) expireToken(tok, text string) {
	if tok == "" {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.expired == nil {
		in.expired = make(map[string]string)
	}
	if _, ok := in.expired[tok]; !ok {
		if len(in.expiredOrder) == maxExpiredTokens {
			delete(in.expired, in.expiredOrder[0])
			in.expiredOrder = append(in.expiredOrder[:0], in.expiredOrder[1:]...)
		}
		in.expiredOrder = append(in.expiredOrder, tok)
	}
	in.expired[tok] = text
}

// expiredBy returns the text of the fault that expired tok, and whether
// it is expired.
func (in *Injector) expiredBy(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	text, ok := in.expired[tok]
	return text, ok
}

// refuseToken answers as hosted Vercel answers an expired token.
func refuseToken(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(expiredTokenBody)))
	w.WriteHeader(http.StatusForbidden)
	_, _ = w.Write([]byte(expiredTokenBody))
}
