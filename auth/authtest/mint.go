package authtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// MintRequest is what a MintServer saw of one request.
type MintRequest struct {
	Method, Path, RawQuery, Authorization string
}

// MintServer fakes the Vercel endpoint that mints project OIDC tokens,
// POST /v1/projects/{project}/token. It counts and records the requests it
// gets and answers them with the handler set by Respond; without one it
// answers 500. It is closed when the test ends.
type MintServer struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	reqs    []MintRequest
	respond http.HandlerFunc
}

// NewMintServer starts a MintServer for the test t.
func NewMintServer(t testing.TB) *MintServer {
	s := &MintServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.reqs = append(s.reqs, MintRequest{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization")})
		respond := s.respond
		s.mu.Unlock()
		if respond == nil {
			http.Error(w, `{"error":{"message":"no response scripted"}}`, http.StatusInternalServerError)
			return
		}
		respond(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Respond sets the handler of the requests to come.
func (s *MintServer) Respond(h http.HandlerFunc) {
	s.mu.Lock()
	s.respond = h
	s.mu.Unlock()
}

// Hits returns how many requests the server got.
func (s *MintServer) Hits() int64 { return s.hits.Load() }

// LastRequest returns the latest request; ok is false before the first.
func (s *MintServer) LastRequest() (r MintRequest, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return MintRequest{}, false
	}
	return s.reqs[len(s.reqs)-1], true
}

// TokenResponse answers {"token": tok}, as the mint endpoint does.
func TokenResponse(tok string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"token": tok})
	}
}
