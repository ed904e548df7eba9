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

// TestForgedTokenFloodLeavesValidRequestsFlowing floods the verifier with
// 40 forged tokens a second, on its own clock, for two minutes: the first
// with no key set cached, the second after ten quiet minutes, when the
// cached set has gone stale. In each second, 20 tokens of made-up issuers
// (Vercel teams and other hosts) arrive at once, then one valid token of
// the trusted issuer, then 20 tokens of the trusted issuer with made-up key
// ids or a bad signature. Every valid request must pass, and the flood may
// cost fetches of the trusted issuer's set only, at most one per refresh
// interval.
func TestForgedTokenFloodLeavesValidRequestsFlowing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const perSecond = 40
	refused, sent := 0, 0
	var valid string // signed at the start of each minute, as a sandbox reuses its token
	second := func(s int) {
		var madeUp, trusted []string
		for i := range perSecond / 4 {
			n := s*perSecond + i
			madeUp = append(madeUp,
				forge("k1", e.with(map[string]any{"iss": fmt.Sprintf("https://oidc.vercel.com/forged-%d", n)})),
				forge("k1", e.with(map[string]any{"iss": fmt.Sprintf("https://forged-%d.example.com", n)})))
			trusted = append(trusted, forge(fmt.Sprintf("forged-%d", n), e.claims()), forge("k1", e.claims()))
		}
		for i, err := range verifyAll(e.v, madeUp) {
			require.Error(t, err, "forged token %d of second %d", i, s)
		}
		if s%60 == 0 {
			valid = e.token(e.claims())
		}
		sent++
		if _, err := e.v.Verify(forwarded(valid)); err != nil {
			refused++
		}
		for i, err := range verifyAll(e.v, trusted) {
			require.Error(t, err, "forged token %d of second %d", i, s)
		}
		e.clock.Advance(time.Second)
	}
	for s := range 60 {
		second(s)
	}
	e.clock.Advance(10 * time.Minute)
	for s := range 60 {
		second(60 + s)
	}
	assert.Zero(t, refused, "valid requests refused, of %d", sent)
	assert.Equal(t, e.keys.count(teamIssuer), e.keys.count(""), "no key set fetched but the trusted issuer's")
	assert.LessOrEqual(t, e.keys.count(teamIssuer), 2*(60/30+1), "the trusted set fetched at most once per refresh interval")
}

func TestUnknownKeyFloodFetchesOncePerInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
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

// TestKnownKeyNeverWaitsForARefetch holds a refetch that a made-up key id
// caused, and checks that a token whose key is cached is verified
// meanwhile.
func TestKnownKeyNeverWaitsForARefetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)

	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce()
	e.keys.respond = func(*http.Request) (*http.Response, error) {
		once.Do(func() { close(started) })
		<-release
		return response(http.StatusOK, keySetJSON(map[string]*rsa.PrivateKey{"k1": rsaKeys()[0]})), nil
	}
	e.clock.Advance(30 * time.Second)
	forged := make(chan error, 1)
	go func() {
		_, err := e.v.Verify(forwarded(forge("made-up", e.claims())))
		forged <- err
	}()
	<-started

	valid := make(chan error, 1)
	go func() {
		_, err := e.v.Verify(forwarded(e.token(e.claims())))
		valid <- err
	}()
	select {
	case err := <-valid:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a token whose key is cached waited for a refetch")
	}
	releaseOnce()
	require.ErrorIs(t, <-forged, proxy.ErrUnknownKey)
	assert.Equal(t, 2, e.keys.count(teamIssuer))
}

// TestUntrustedIssuerCostsNothing sends tokens of issuers the verifier was
// not made with, among them near spellings of the trusted one and
// hundreds of made-up Vercel teams: each is refused with no fetch.
func TestUntrustedIssuerCostsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var toks []string
	for _, iss := range []string{
		"https://oidc.vercel.com", // the default, replaced by the issuer named
		"https://oidc.vercel.com/acme/", "https://OIDC.vercel.com/acme", "https://oidc.vercel.com:443/acme",
		"https://oidc.vercel.com/ACME", "https://oidc.vercel.com/acme/..", "https://oidc.vercel.com/acme/x",
	} {
		toks = append(toks, e.token(e.with(map[string]any{"iss": iss})))
	}
	for i := range 200 {
		toks = append(toks, forge("k1", e.with(map[string]any{"iss": fmt.Sprintf("https://oidc.vercel.com/team-%d", i)})))
	}
	for i, err := range verifyAll(e.v, toks) {
		require.ErrorIs(t, err, proxy.ErrInvalidIssuer, "token %d", i)
	}
	assert.Zero(t, e.keys.count(""), "nothing fetched")

	_, err := e.v.Verify(forwarded(e.token(e.claims())))
	require.NoError(t, err)
	assert.Equal(t, 1, e.keys.count(""))
}

func TestDefaultTrustsVercelsGlobalIssuerAlone(t *testing.T) {
	t.Parallel()
	keys, clock := newIssuers(), newClock()
	v, err := proxy.NewVerifier(proxy.WithHTTPClient(&http.Client{Transport: keys}), proxy.WithClock(clock.Now))
	require.NoError(t, err)
	e := &env{t: t, clock: clock}
	_, err = v.Verify(forwarded(e.token(e.with(map[string]any{"iss": "https://oidc.vercel.com"}))))
	require.NoError(t, err)
	assert.Equal(t, 1, keys.count("https://oidc.vercel.com"))

	_, err = v.Verify(forwarded(e.token(e.claims())))
	require.ErrorIs(t, err, proxy.ErrInvalidIssuer)
	assert.Contains(t, err.Error(), "WithTrustedIssuer", "says how to trust a team's issuer")
	assert.Equal(t, 1, keys.count(""), "nothing fetched for a team's issuer")
}

// TestEachTrustedIssuerHasItsOwnKeySet checks that two trusted issuers'
// sets are fetched and refreshed apart.
func TestEachTrustedIssuerHasItsOwnKeySet(t *testing.T) {
	t.Parallel()
	const other = "https://oidc.vercel.com/other"
	e := newEnv(t, proxy.WithTrustedIssuer(other))
	verify := func(iss string) {
		t.Helper()
		_, err := e.v.Verify(forwarded(e.token(e.with(map[string]any{"iss": iss}))))
		require.NoError(t, err)
	}
	verify(teamIssuer)
	verify(other)
	verify(teamIssuer)
	assert.Equal(t, 1, e.keys.count(teamIssuer))
	assert.Equal(t, 1, e.keys.count(other))

	e.clock.Advance(30 * time.Second)
	_, err := e.v.Verify(forwarded(forge("made-up", e.claims())))
	require.ErrorIs(t, err, proxy.ErrUnknownKey)
	assert.Equal(t, 2, e.keys.count(teamIssuer), "an unknown key id refreshes its issuer's set")
	assert.Equal(t, 1, e.keys.count(other), "and no other")
	verify(other)
}

func TestConcurrentFirstRequestsShareOneFetch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
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
