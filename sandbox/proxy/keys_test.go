package proxy_test

import (
	"context"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

// verifyAll verifies one request per token, all at once, and returns the
// errors.
func verifyAll(v *proxy.Verifier, tokens []string) []error {
	errs := make([]error, len(tokens))
	var wg sync.WaitGroup
	for i, tok := range tokens {
		wg.Go(func() { _, errs[i] = v.Verify(forwarded(tok)) })
	}
	wg.Wait()
	return errs
}

func TestUnknownKeyFloodFetchesOncePerInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxy.WithFetchLimit(1000, time.Second))
	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)
	require.Equal(t, 1, e.keys.count(""))

	flood := func() []string {
		toks := make([]string, 100)
		for i := range toks {
			toks[i] = sign(t, rsaKeys()[1], fmt.Sprintf("made-up-%d", i), e.claims())
		}
		return toks
	}
	toks := flood()
	for _, err := range verifyAll(e.v, toks) {
		require.ErrorIs(t, err, proxy.ErrUnknownKey)
	}
	assert.Equal(t, 1, e.keys.count(""), "the set was just fetched: no fetch for any of 100 unknown key ids")

	e.clock.Advance(30 * time.Second)
	for _, err := range verifyAll(e.v, toks) {
		require.ErrorIs(t, err, proxy.ErrUnknownKey)
	}
	assert.Equal(t, 2, e.keys.count(""), "one refresh per interval, however many unknown key ids")

	_, err = e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err, "known keys keep working during a flood")
	assert.Equal(t, 2, e.keys.count(""))
}

func TestRotatedKeyIsFetchedOnceTheIntervalHasPassed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)

	e.keys.publish(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0], "k2": rsaKeys()[1]})
	rotated := forwarded(sign(t, rsaKeys()[1], "k2", e.claims()))
	_, err = e.v.Verify(rotated)
	require.ErrorIs(t, err, proxy.ErrUnknownKey, "within the refresh interval, as in the official SDK")

	e.clock.Advance(30 * time.Second)
	_, err = e.v.Verify(forwarded(sign(t, rsaKeys()[1], "k2", e.claims())))
	require.NoError(t, err)
	assert.Equal(t, 2, e.keys.count(teamIssuer))
}

func TestIssuerFloodIsLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxy.WithFetchLimit(3, time.Minute))
	toks := make([]string, 50)
	for i := range toks {
		toks[i] = e.token(e.with(map[string]any{"iss": fmt.Sprintf("https://oidc.vercel.com/team-%d", i)}))
	}
	ok := 0
	for _, err := range verifyAll(e.v, toks) {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, proxy.ErrKeySetUnavailable)
	}
	assert.Equal(t, 3, e.keys.count(""), "no more fetches than the limit allows, over all issuers")
	assert.Equal(t, 3, ok)

	e.clock.Advance(20 * time.Second)
	_, err := e.v.Verify(forwarded(e.token(e.with(map[string]any{"iss": "https://oidc.vercel.com/late"}))))
	require.NoError(t, err, "the limit refills")
	assert.Equal(t, 4, e.keys.count(""))
}

func TestConcurrentFirstRequestsShareOneFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxy.WithRefreshInterval(0), proxy.WithFetchLimit(1000, time.Second))
	release := make(chan struct{})
	var started atomic.Int32
	e.keys.respond = func(r *http.Request) (*http.Response, error) {
		started.Add(1)
		<-release
		return response(http.StatusOK, keySetJSON(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0]})), nil
	}
	toks := make([]string, 30)
	for i := range toks {
		toks[i] = e.token(e.claims())
	}
	done := make(chan []error)
	go func() { done <- verifyAll(e.v, toks) }()
	require.Eventually(t, func() bool { return started.Load() == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // lets the other requests reach the fetch
	close(release)
	for _, err := range <-done {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, e.keys.count(""))
}

func TestStaleKeySetIsFetchedAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)
	e.clock.Advance(9 * time.Minute)
	_, err = e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)
	assert.Equal(t, 1, e.keys.count(""), "fresh for 10 minutes")

	e.clock.Advance(time.Minute)
	e.keys.publish(map[string]*rsa.PrivateKey{"k2": rsaKeys()[1]})
	_, err = e.v.Verify(forwarded(e.token(e.claims())))
	require.ErrorIs(t, err, proxy.ErrUnknownKey, "a key withdrawn from the set is no longer trusted")
	assert.Equal(t, 2, e.keys.count(""))
}

func TestKeyCacheIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxy.WithKeyCacheSize(2), proxy.WithFetchLimit(1000, time.Second))
	verify := func(iss string) {
		t.Helper()
		_, err := e.v.Verify(forwarded(e.token(e.with(map[string]any{"iss": iss}))))
		require.NoError(t, err)
	}
	a, b, c := "https://oidc.vercel.com/a", "https://oidc.vercel.com/b", "https://oidc.vercel.com/c"
	verify(a)
	verify(b)
	verify(a) // a is now the most recently used
	verify(c) // drops b
	verify(a)
	assert.Equal(t, 1, e.keys.count(a), "a stayed")
	verify(b)
	assert.Equal(t, 2, e.keys.count(b), "b was dropped and fetched again")
}

// TestHostileKeySetServer checks each way a key-set server can fail: the
// request is refused with ErrKeySetUnavailable (or ErrUnknownKey when the
// set holds no usable key), memory stays bounded, and the failure is not
// retried before the refresh interval.
func TestHostileKeySetServer(t *testing.T) {
	t.Parallel()
	good := keySetJSON(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0]})
	cases := []struct {
		name    string
		respond func(*http.Request) (*http.Response, error)
		want    error
	}{
		{"status 500", status(500, good), proxy.ErrKeySetUnavailable},
		{"status 201", status(201, good), proxy.ErrKeySetUnavailable},
		{"redirect", func(*http.Request) (*http.Response, error) {
			r := response(http.StatusFound, nil)
			r.Header.Set("Location", "https://evil.example.com/jwks")
			return r, nil
		}, proxy.ErrKeySetUnavailable},
		{"not JSON", status(200, []byte("<html>")), proxy.ErrKeySetUnavailable},
		{"keys not an array", status(200, []byte(`{"keys":{}}`)), proxy.ErrKeySetUnavailable},
		{"no keys member", status(200, []byte(`{}`)), proxy.ErrKeySetUnavailable},
		{"member not an object", status(200, []byte(`{"keys":[1]}`)), proxy.ErrKeySetUnavailable},
		{"no usable key", status(200, []byte(`{"keys":[{"kty":"EC","kid":"k1"},{"kty":"RSA","kid":"k1","n":"AQAB","e":"AQAB"},{"kty":"RSA","kid":"k1","alg":"RS512"}]}`)), proxy.ErrUnknownKey},
		{"transport error", func(*http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }, proxy.ErrKeySetUnavailable},
		{"endless body", func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(endless{})}, nil
		}, proxy.ErrKeySetUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.keys.respond = tc.respond
			token := e.token(e.claims())
			_, err := e.v.Verify(forwarded(token))
			require.ErrorIs(t, err, tc.want)
			assertNoToken(t, err.Error(), token)
			_, err = e.v.Verify(forwarded(token))
			require.Error(t, err)
			assert.Equal(t, 1, e.keys.count(teamIssuer), "a failed fetch is not retried within the interval")
		})
	}
}

func status(code int, body []byte) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) { return response(code, body), nil }
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestSlowKeySetServerTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, proxy.WithHTTPClient(&http.Client{Timeout: 50 * time.Millisecond, Transport: roundTripFunc(
		func(r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}))
	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.ErrorIs(t, err, proxy.ErrKeySetUnavailable)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCancelledRequestDoesNotFailOthersSharingItsFetch(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e := newEnv(t)
	e.keys.respond = func(r *http.Request) (*http.Response, error) {
		<-release
		return response(http.StatusOK, keySetJSON(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0]})), nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error)
	go func() {
		_, err := e.v.Verify(forwarded(e.token(e.claims())).WithContext(ctx))
		first <- err
	}()
	second := make(chan error)
	go func() {
		time.Sleep(10 * time.Millisecond)
		_, err := e.v.Verify(forwarded(e.token(e.claims())))
		second <- err
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	close(release)
	<-first
	require.NoError(t, <-second)
}

// TestTrustedIssuerOnLoopback runs a real issuer on a loopback server.
func TestTrustedIssuerOnLoopback(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/jwks" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		_, _ = w.Write(keySetJSON(map[string]*rsa.PrivateKey{"local": rsaKeys()[2]}))
	}))
	defer srv.Close()
	claims := map[string]any{"iss": srv.URL, "aud": forwardURL, "exp": time.Now().Add(time.Minute).Unix(),
		"team_id": "team_1", "project_id": "prj_1", "sandbox_id": "sbx_1"}
	token := sign(t, rsaKeys()[2], "local", claims)

	v, err := proxy.NewVerifier(proxy.WithTrustedIssuer(srv.URL), proxy.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	f, err := v.Verify(forwarded(token))
	require.NoError(t, err)
	assert.Equal(t, "sbx_1", f.SandboxName)
	assert.EqualValues(t, 1, fetches.Load())

	plain, err := proxy.NewVerifier(proxy.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	_, err = plain.Verify(forwarded(token))
	require.ErrorIs(t, err, proxy.ErrInvalidIssuer, "without the option, a loopback issuer is refused")
	assert.EqualValues(t, 1, fetches.Load(), "and its keys are never fetched")
	assert.False(t, strings.Contains(err.Error(), srv.URL))
}
