package httpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/loopback"
)

var errInsecure = errors.New("vercel sandbox: refusing to send credentials over plain http to a non-loopback host")

// credentialError marks a failure to obtain credentials, which no retry
// can mend.
type credentialError struct{ err error }

func (e *credentialError) Error() string { return e.err.Error() }
func (e *credentialError) Unwrap() error { return e.err }

func isCredentialError(err error) bool {
	var ce *credentialError
	return errors.As(err, &ce)
}

// authTransport sets the headers every attempt needs: credentials (asked
// for afresh, so a refreshed token is used by a retry), the team, the user
// agent. On a 401 from a provider that can invalidate its token, or a 403
// that says invalidToken (how hosted Vercel answers an expired token), it
// sends the request once more with a new token when the body can be
// replayed; if that new token is refused too, it is sent once more after a
// short pause (freshRefused).
// Each call has its own authTransport, which records the tokens it sends
// in the call's sentTokens.
type authTransport struct {
	c    *Client
	next http.RoundTripper
	sent *sentTokens
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if loopback.Check("URL", req.URL) != nil {
		closeBody(req)
		return nil, errInsecure
	}
	r, tok, err := t.authorize(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	t.sent.add(tok)
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusForbidden {
		var invalid bool
		if resp, invalid = invalidToken(resp); !invalid {
			return resp, nil
		}
	} else if resp.StatusCode != http.StatusUnauthorized {
		return resp, nil
	}
	inv, ok := t.c.provider.(auth.Invalidator)
	if !ok || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	body, err := reopenBody(req)
	if err != nil {
		return resp, nil
	}
	discard(resp)
	inv.Invalidate(tok)
	stale := tok
	r2 := req.Clone(req.Context())
	if body != nil {
		r2.Body = body
	}
	r2, tok, err = t.authorize(r2)
	if err != nil {
		if body != nil {
			body.Close()
		}
		return nil, err
	}
	t.sent.add(tok)
	resp, err = t.next.RoundTrip(r2)
	if err != nil || tok == stale || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err // not refused, or no fresh token to give a moment
	}
	return t.freshRefused(req, r2, resp)
}

// freshTokenPause is how long a just-refreshed token that was refused is
// given before it is sent once more.
const freshTokenPause = 500 * time.Millisecond

// freshRefused answers a just-refreshed token that was refused (resp, to
// sent): hosted Vercel can briefly refuse a fresh token with 401 or 403
// (vercel/sandbox#192, #247), so the same token is sent once more after a
// short pause. Never more: a token still refused then is the answer.
func (t *authTransport) freshRefused(orig, sent *http.Request, resp *http.Response) (*http.Response, error) {
	body, err := reopenBody(orig)
	if err != nil {
		return resp, nil
	}
	if err := Sleep(orig.Context(), freshTokenPause); err != nil {
		if body != nil {
			body.Close()
		}
		return resp, nil
	}
	discard(resp)
	r3 := sent.Clone(sent.Context())
	if body != nil {
		r3.Body = body
	}
	return t.next.RoundTrip(r3)
}

// reopenBody returns a new copy of req's body for one more attempt, or nil
// when it has none.
func reopenBody(req *http.Request) (io.ReadCloser, error) {
	if req.GetBody == nil || req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	return req.GetBody()
}

// discard reads a little of a refused answer, so its connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// invalidToken reports whether a 403 answer says the token is invalid
// ({"error":{…,"invalidToken":true}}). It reads at most 64 KiB of the body
// and gives back an answer whose body reads the same as before.
func invalidToken(resp *http.Response) (*http.Response, bool) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return resp, false
	}
	var body struct {
		InvalidToken bool `json:"invalidToken"`
		Error        struct {
			InvalidToken bool `json:"invalidToken"`
		} `json:"error"`
	}
	if json.Unmarshal(head, &body) != nil {
		return resp, false
	}
	return resp, body.InvalidToken || body.Error.InvalidToken
}

func (t *authTransport) authorize(req *http.Request) (*http.Request, string, error) {
	cr, err := t.c.provider.Credentials(req.Context())
	if err != nil {
		return nil, "", &credentialError{err: err}
	}
	team := cr.TeamID
	if t.c.teamID != "" {
		team = t.c.teamID
	}
	r := req.Clone(req.Context())
	r.Body = req.Body
	if cr.Token != "" {
		r.Header.Set("Authorization", "Bearer "+cr.Token)
	}
	r.Header.Set("User-Agent", t.c.ua)
	q := r.URL.Query()
	q.Del("teamId")
	rest := q.Encode()
	raw := ""
	if team != "" {
		raw = "teamId=" + url.QueryEscape(team)
	}
	if rest != "" {
		if raw != "" {
			raw += "&"
		}
		raw += rest
	}
	r.URL.RawQuery = raw
	return r, cr.Token, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// minRedacted is the shortest token redacted from answers: replacing a
// shorter one would mangle the text without protecting anything.
const minRedacted = 8

// sentTokens collects the tokens the attempts of one call sent, so that an
// answer echoing one can be redacted. The call owns it; a nil *sentTokens
// records nothing.
type sentTokens struct {
	mu     sync.Mutex
	tokens []string
}

// add records tok, unless it is too short to redact or known already.
func (s *sentTokens) add(tok string) {
	if s == nil || len(tok) < minRedacted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.tokens, tok) {
		s.tokens = append(s.tokens, tok)
	}
}

// list returns the tokens recorded so far.
func (s *sentTokens) list() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}
