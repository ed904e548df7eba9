package loopback

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://api.vercel.com":       true,
		"https://api.localhost":        true, // TLS protects what DNS may misroute
		"http://127.0.0.1:8080":        true,
		"http://127.1.2.3":             true,
		"http://[::1]:3000":            true,
		"http://localhost:3000/api":    true,
		"http://LocalHost":             true,
		"http://localhost.":            false, // the FQDN form goes to DNS when no hosts file names it
		"http://api.localhost":         false, // resolved through DNS
		"http://localhost.example.com": false,
		"http://example.com":           false,
		"http://10.0.0.1":              false,
		"http://0.0.0.0":               false,
		"http://[::]":                  false,
		"http://127.1":                 false, // not a literal address to Go: it would be looked up
		"http://0x7f.0.0.1":            false,
		"http://[fe80::1%25lo]":        false,
		"ftp://127.0.0.1":              false,
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err, raw)
		err = Check("BaseURL", u)
		if ok {
			assert.NoError(t, err, raw)
			continue
		}
		var ie *apierr.InsecureURLError
		require.ErrorAs(t, err, &ie, raw)
		assert.Equal(t, "BaseURL", ie.Field)
		assert.ErrorIs(t, err, apierr.ErrInsecureURL)
		assert.ErrorIs(t, err, apierr.ErrInvalidInput)
	}
}

func TestTransportRefusesOpaqueRoundTripper(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://localhost:1")
	opaque := roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	_, err := Transport("BaseURL", u, opaque)
	var ie *apierr.InsecureURLError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "127.0.0.1")
}

// TestLocalhostIsNeverLookedUp sends a request to http://localhost through
// a transport whose resolver records every query: the request arrives, the
// resolver is never asked, and the dialer underneath only ever sees
// literal addresses.
func TestLocalhostIsNeverLookedUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	var mu sync.Mutex
	var queries, dialled []string
	resolver := &net.Resolver{PreferGo: true, Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
		mu.Lock()
		queries = append(queries, addr)
		mu.Unlock()
		return nil, errors.New("no resolver in this test")
	}}
	d := &net.Dialer{Resolver: resolver}
	base := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return d.DialContext(ctx, network, addr)
	}}
	u, _ := url.Parse("http://LOCALHOST:" + port + "/")
	rt, err := Transport("BaseURL", u, base)
	require.NoError(t, err)
	resp, err := (&http.Client{Transport: rt}).Get(u.String())
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok", string(body))

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, queries, "localhost must never reach a resolver")
	for _, a := range dialled {
		h, _, _ := net.SplitHostPort(a)
		assert.NotNil(t, net.ParseIP(h), "the dialer was given a name to resolve: %s", a)
	}
	assert.NotEmpty(t, dialled)
}

func TestDialerFallsBackToIPv6(t *testing.T) {
	t.Parallel()
	var tried []string
	dial := Dialer(func(_ context.Context, _, addr string) (net.Conn, error) {
		tried = append(tried, addr)
		return nil, errors.New("refused")
	})
	_, err := dial(t.Context(), "tcp", "localhost:80")
	require.Error(t, err)
	assert.Equal(t, []string{"127.0.0.1:80", "[::1]:80"}, tried)

	tried = nil
	_, _ = dial(t.Context(), "tcp", "example.com:80")
	assert.Equal(t, []string{"example.com:80"}, tried, "other names are dialled as given")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestLocalhostIsNeverProxied: a transport with a proxy for everything
// (as HTTP_PROXY sets one) sends localhost, in any case, direct.
func TestLocalhostIsNeverProxied(t *testing.T) {
	t.Parallel()
	proxyURL, _ := url.Parse("http://proxy.example.com:3128")
	base := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	for _, raw := range []string{"http://localhost:1/", "http://LOCALHOST:1/"} {
		u, _ := url.Parse(raw)
		rt, err := Transport("BaseURL", u, base)
		require.NoError(t, err)
		got, err := rt.Proxy(&http.Request{URL: u})
		require.NoError(t, err)
		assert.Nil(t, got, raw)
	}
	other, _ := url.Parse("https://api.vercel.com/")
	rt, _ := Transport("BaseURL", other, base)
	got, _ := rt.Proxy(&http.Request{URL: other})
	assert.Equal(t, proxyURL, got, "other hosts keep their proxy")
}
