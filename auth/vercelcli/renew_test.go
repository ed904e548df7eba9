package vercelcli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oauthServer fakes the discovery document and the token endpoint.
type oauthServer struct {
	*httptest.Server
	discoveryHits, tokenHits atomic.Int64
	mu                       sync.Mutex
	forms                    []url.Values
	discovery                func(w http.ResponseWriter, base string)
	token                    http.HandlerFunc
}

func newOAuthServer(t *testing.T) *oauthServer {
	s := &oauthServer{}
	s.discovery = func(w http.ResponseWriter, base string) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": base, "token_endpoint": base + "/login/oauth/token"})
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			s.discoveryHits.Add(1)
			s.discovery(w, s.URL)
		case "/login/oauth/token":
			s.tokenHits.Add(1)
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			_ = r.ParseForm()
			s.mu.Lock()
			s.forms = append(s.forms, r.PostForm)
			s.mu.Unlock()
			s.token(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// Test 27.
func TestRenewCLILogin(t *testing.T) {
	t.Parallel()
	minted := tok("team", "prj", t0.Add(12*time.Hour))
	expired := `{"// Note":"keep me","token":"old_access","refreshToken":"old_rt","expiresAt":` + itoa(t0.Add(-time.Hour).Unix()) + `,"userId":"u_1"}`

	setup := func(t *testing.T, token http.HandlerFunc) (*fixture, *oauthServer, *LinkedProjectRefresher, string) {
		f := newFixture(t)
		path := f.writeCLIAuth(expired)
		f.srv.Respond(tokenResponse(minted))
		o := newOAuthServer(t)
		o.token = token
		r := f.refresher()
		r.RenewCLILogin = true
		r.IssuerURL = o.URL
		return f, o, r, path
	}
	readAuth := func(t *testing.T, path string) map[string]any {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		return m
	}

	t.Run("rotated refresh token is saved", func(t *testing.T) {
		t.Parallel()
		f, o, r, path := setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"new_access","token_type":"Bearer","expires_in":3600,"refresh_token":"new_rt"}`))
		})
		got, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		assert.Equal(t, minted, got)
		assert.EqualValues(t, 1, o.discoveryHits.Load(), "the token endpoint comes from discovery")
		require.Len(t, o.forms, 1)
		assert.Equal(t, url.Values{
			"client_id":     {"cl_HYyOPBNtFMfHhaUn9L4QPfTZz6TP47bp"},
			"grant_type":    {"refresh_token"},
			"refresh_token": {"old_rt"},
		}, o.forms[0])
		assert.Equal(t, "Bearer new_access", f.lastRequest().Authorization)

		m := readAuth(t, path)
		assert.Equal(t, "new_access", m["token"])
		assert.Equal(t, "new_rt", m["refreshToken"])
		assert.EqualValues(t, t0.Unix()+3600, m["expiresAt"])
		assert.Equal(t, "keep me", m["// Note"])
		assert.Equal(t, "u_1", m["userId"])
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	})
	t.Run("old refresh token kept when none is returned", func(t *testing.T) {
		t.Parallel()
		_, _, r, path := setup(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"new_access","token_type":"bearer","expires_in":60}`))
		})
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		require.NoError(t, err)
		m := readAuth(t, path)
		assert.Equal(t, "new_access", m["token"])
		assert.Equal(t, "old_rt", m["refreshToken"])
	})
	failures := map[string]http.HandlerFunc{
		"invalid_grant": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
		},
		"not bearer": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"x","token_type":"DPoP","expires_in":60}`))
		},
		"no expires_in": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"access_token":"x","token_type":"Bearer"}`))
		},
	}
	for name, h := range failures {
		t.Run("failure leaves auth.json unchanged: "+name, func(t *testing.T) {
			t.Parallel()
			f, _, r, path := setup(t, h)
			_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrCLILoginRequired)
			assert.NotContains(t, err.Error(), "old_rt")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, expired, string(data))
			assert.Zero(t, f.srv.Hits())
		})
	}
	t.Run("discovery without token_endpoint", func(t *testing.T) {
		t.Parallel()
		f, o, r, path := setup(t, nil)
		o.discovery = func(w http.ResponseWriter, base string) { _, _ = w.Write([]byte(`{"issuer":"x"}`)) }
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		assert.ErrorIs(t, err, ErrCLILoginRequired)
		assert.Contains(t, err.Error(), "token_endpoint")
		data, _ := os.ReadFile(path)
		assert.Equal(t, expired, string(data))
		assert.Zero(t, o.tokenHits.Load())
		assert.Zero(t, f.srv.Hits())
	})
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		f, o, r, _ := setup(t, nil)
		r.RenewCLILogin = false
		_, err := r.Refresh(context.Background(), auth.Target{ProjectID: "prj", TeamID: "team"})
		assert.ErrorIs(t, err, ErrCLILoginRequired)
		assert.Zero(t, o.discoveryHits.Load())
		assert.Zero(t, f.srv.Hits())
	})
}
