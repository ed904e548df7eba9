package httpcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

func TestCredentialErrors(t *testing.T) {
	t.Parallel()
	errNoCreds := errors.New("no credentials configured")
	for _, safety := range []Safety{Idempotent, Unsafe} {
		t.Run(fmt.Sprint(safety), func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(http.ResponseWriter, *http.Request, int32) {})
			var asked atomic.Int32
			c := newClient(t, srv.URL, withProvider(auth.ProviderFunc(func(context.Context) (auth.Credentials, error) {
				asked.Add(1)
				return auth.Credentials{}, errNoCreds
			})))
			err := c.JSON(t.Context(), &Call{Method: "POST", Path: "/v3/sandboxes", JSON: struct{}{}, Safety: safety}, nil)
			assert.ErrorIs(t, err, errNoCreds)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult, "nothing was sent")
			assert.Zero(t, hits.Load())
			assert.EqualValues(t, 1, asked.Load(), "not retried")
		})
	}
}

// Spec auth.md tests 29 and 30.
func TestUnauthorizedInvalidatesOnce(t *testing.T) {
	t.Parallel()
	bodies := []struct {
		name string
		call func() *Call
	}{
		{"JSON body", func() *Call {
			return &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", JSON: map[string]string{"command": "ls"}, Safety: Unsafe}
		}},
		{"reopenable body", func() *Call {
			return &Call{Method: "POST", Path: "/v2/sandboxes/sessions/s/cmd", Safety: Unsafe,
				Body: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(`{"command":"ls"}`)), nil }}
		}},
		{"no body", func() *Call { return &Call{Method: "GET", Path: "/v2/sandboxes/s"} }},
	}
	for _, b := range bodies {
		t.Run(b.name+"/second token accepted", func(t *testing.T) {
			t.Parallel()
			p := &refreshingProvider{}
			var mu sync.Mutex
			var got []string
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				data, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, r.Header.Get("Authorization")+"|"+r.URL.Query().Get("teamId")+"|"+string(data))
				mu.Unlock()
				if r.Header.Get("Authorization") != "Bearer "+canary+"-1" {
					writeError(w, http.StatusUnauthorized, "unauthorized", "token expired")
					return
				}
				_, _ = io.WriteString(w, `{"ok":true}`)
			})
			c := newClient(t, srv.URL, withProvider(p))
			call := b.call()
			var out struct{ OK bool }
			require.NoError(t, c.JSON(t.Context(), call, &out))
			assert.True(t, out.OK)
			assert.EqualValues(t, 2, hits.Load())
			assert.Equal(t, []string{canary + "-0"}, p.invalidations())
			want := ""
			if call.Method == "POST" {
				want = `{"command":"ls"}`
			}
			assert.Equal(t, []string{
				"Bearer " + canary + "-0|team_prov|" + want,
				"Bearer " + canary + "-1|team_prov|" + want,
			}, got, "body replayed on the retry")
		})
		t.Run(b.name+"/second 401 is an error", func(t *testing.T) {
			t.Parallel()
			p := &refreshingProvider{}
			srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
				writeError(w, http.StatusUnauthorized, "unauthorized", "nope")
			})
			c := newClient(t, srv.URL, withProvider(p))
			err := c.JSON(t.Context(), b.call(), nil)
			assert.EqualValues(t, 3, hits.Load(), "the fresh token once more, then no loop")
			assert.Equal(t, []string{canary + "-0"}, p.invalidations())
			assert.ErrorIs(t, err, apierr.ErrUnauthorized)
			assert.NotErrorIs(t, err, apierr.ErrUnknownResult)
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, http.StatusUnauthorized, ae.StatusCode)
			assert.Equal(t, "nope", ae.Message)
			noSecret(t, err)
		})
	}
}

func TestUnauthorizedNotRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider auth.Provider
		status   int
		call     Call
	}{
		{"provider without Invalidate", staticProvider(canary, "t", "p"), http.StatusUnauthorized,
			Call{Method: "GET", Path: "/v2/x"}},
		{"403 is not an auth refresh signal", &refreshingProvider{}, http.StatusForbidden,
			Call{Method: "GET", Path: "/v2/x"}},
		{"one-shot body cannot be replayed", &refreshingProvider{}, http.StatusUnauthorized,
			Call{Method: "POST", Path: "/v2/x", OneShot: io.LimitReader(strings.NewReader("payload"), 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				_, _ = io.Copy(io.Discard, r.Body)
				writeError(w, tt.status, "forbidden", "no access")
			})
			c := newClient(t, srv.URL, withProvider(tt.provider))
			call := tt.call
			err := c.JSON(t.Context(), &call, nil)
			assert.EqualValues(t, 1, hits.Load())
			var ae *apierr.Error
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tt.status, ae.StatusCode)
			if p, ok := tt.provider.(*refreshingProvider); ok {
				assert.Empty(t, p.invalidations())
			}
			noSecret(t, err)
		})
	}
}

// An answer that echoes the tokens the call sent, the first one and the
// one after a 401, never shows them: the call hands the tokens its
// attempts sent to the error it builds.
func TestEchoedTokensAreRedacted(t *testing.T) {
	t.Parallel()
	echo := func(w http.ResponseWriter, r *http.Request, status int) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("X-Vercel-Id", "iad1::"+tok)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"code":"bad_token","message":"token `+tok+` is not allowed"}}`)
	}
	t.Run("error answer", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, n int32) {
			if n == 1 {
				echo(w, r, http.StatusUnauthorized)
				return
			}
			echo(w, r, http.StatusForbidden)
		})
		c := newClient(t, srv.URL, withProvider(&refreshingProvider{}))
		err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
		var ae *apierr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, http.StatusForbidden, ae.StatusCode)
		assert.Equal(t, "token [REDACTED] is not allowed", ae.Message)
		assert.Equal(t, "iad1::[REDACTED]", ae.RequestID)
		noSecret(t, err)
	})
	t.Run("undecodable success", func(t *testing.T) {
		t.Parallel()
		srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
			_, _ = io.WriteString(w, "{"+r.Header.Get("Authorization"))
		})
		c := newClient(t, srv.URL)
		err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, &struct{}{})
		var de *apierr.DecodeError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "{Bearer [REDACTED]", de.Excerpt)
		noSecret(t, err)
	})
}

// Hosted Vercel answers an expired token with 403 and invalidToken: true.
// That is refreshed once, like a 401; any other 403 is the answer.
func TestForbiddenInvalidTokenRefreshesOnce(t *testing.T) {
	t.Parallel()
	p := &refreshingProvider{}
	srv, hits := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
		if r.Header.Get("Authorization") != "Bearer "+canary+"-1" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":{"code":"forbidden","message":"Not authorized","invalidToken":true}}`)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	})
	c := newClient(t, srv.URL, withProvider(p))
	var out struct{ OK bool }
	require.NoError(t, c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/s"}, &out))
	assert.True(t, out.OK)
	assert.EqualValues(t, 2, hits.Load())
	assert.Equal(t, []string{canary + "-0"}, p.invalidations())
}

func TestForbiddenWithoutInvalidTokenIsTheAnswer(t *testing.T) {
	t.Parallel()
	p := &refreshingProvider{}
	srv, hits := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
		writeError(w, http.StatusForbidden, "forbidden", "not your team")
	})
	c := newClient(t, srv.URL, withProvider(p))
	err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/sandboxes/s"}, nil)
	assert.EqualValues(t, 1, hits.Load())
	assert.Empty(t, p.invalidations())
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "not your team", ae.Message, "the body still reads whole")
}
