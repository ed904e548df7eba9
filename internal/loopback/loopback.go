// Package loopback is the one rule for plain HTTP: credentials (and
// anything else that must not be read or forged on the way) may travel in
// clear text only to the local machine, named by a literal loopback
// address (127.0.0.0/8, ::1) or by the exact name localhost. The name is
// never looked up: whoever answered a DNS query for it would receive the
// bearer token. So localhost is dialled at 127.0.0.1, then ::1, by a
// transport this package wraps; any other name, *.localhost included, is
// refused for plain HTTP.
//
// A trailing dot ("localhost.") is refused: it is the fully qualified DNS
// form, which resolvers send on to DNS when a hosts file does not name it,
// and one spelling keeps the rule and the dialer in step.
package loopback

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Host reports whether host (as url.URL.Hostname returns it, without
// brackets or port) names the local machine without a lookup: a literal
// loopback IP address, or localhost in any case.
func Host(host string) bool {
	if IsName(host) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsName reports whether host is the name localhost, in any case.
func IsName(host string) bool { return strings.EqualFold(host, "localhost") }

// Check returns nil when u may carry credentials: https, or plain http to
// a Host. Otherwise it returns an *apierr.InsecureURLError naming field.
func Check(field string, u *url.URL) error {
	if u.Scheme == "https" || (u.Scheme == "http" && Host(u.Hostname())) {
		return nil
	}
	return &apierr.InsecureURLError{Field: field, Scheme: u.Scheme, Host: u.Host}
}

// NeedsDialer reports whether requests to u must go through a Transport of
// this package: plain http to the name localhost.
func NeedsDialer(u *url.URL) bool { return u.Scheme == "http" && IsName(u.Hostname()) }

// opaqueTransport is why Transport refuses a RoundTripper whose dialing it
// cannot see.
const opaqueTransport = "a custom http.RoundTripper may look localhost up through DNS; use http://127.0.0.1 or http://[::1] with it"

// Transport returns a clone of rt (nil: http.DefaultTransport) that dials
// the name localhost at 127.0.0.1, then ::1, without any lookup, and never
// through a proxy. It fails
// with an *apierr.InsecureURLError naming field when rt is not an
// *http.Transport, whose dialing it cannot change.
func Transport(field string, u *url.URL, rt http.RoundTripper) (*http.Transport, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, &apierr.InsecureURLError{Field: field, Scheme: u.Scheme, Host: u.Host, Reason: opaqueTransport}
	}
	t = t.Clone()
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = Dialer(dial)
	// A proxy would look the name up itself (and read the credentials):
	// localhost is never proxied. ProxyFromEnvironment knows that only
	// for the name in lower case.
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(r *http.Request) (*url.URL, error) {
			if IsName(r.URL.Hostname()) {
				return nil, nil
			}
			return proxy(r)
		}
	}
	return t, nil
}

// Dialer wraps dial so that an address whose host is the name localhost is
// dialled at 127.0.0.1, then at ::1 if that fails; other addresses go to
// dial unchanged.
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil || !IsName(host) {
			return dial(ctx, network, addr)
		}
		c, err4 := dial(ctx, network, net.JoinHostPort("127.0.0.1", port))
		if err4 == nil || ctx.Err() != nil {
			return c, err4
		}
		c, err6 := dial(ctx, network, net.JoinHostPort("::1", port))
		if err6 != nil {
			return nil, errors.Join(err4, err6)
		}
		return c, nil
	}
}
