package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The headers Vercel adds to a forwarded request.
const (
	headerHost   = "Vercel-Forwarded-Host"
	headerScheme = "Vercel-Forwarded-Scheme"
	headerPort   = "Vercel-Forwarded-Port"
	headerPath   = "Vercel-Forwarded-Path"
	headerToken  = "Vercel-Sandbox-Oidc-Token"
)

// forwardedHeaders are the headers removed before the next handler runs.
var forwardedHeaders = [...]string{headerHost, headerScheme, headerPort, headerPath, headerToken}

// forwardedRequest is what the headers of a forwarded request say.
type forwardedRequest struct {
	token string
	path  string   // vercel-forwarded-path, as sent
	url   *url.URL // the destination
}

// readHeaders reads the five headers of r and rebuilds the destination.
func readHeaders(r *http.Request) (*forwardedRequest, error) {
	var v [len(forwardedHeaders)]string
	for i, name := range forwardedHeaders {
		vals := r.Header[name]
		if len(vals) > 1 {
			return nil, fmt.Errorf("%w: %s is repeated", ErrInvalidHeader, strings.ToLower(name))
		}
		if len(vals) == 1 {
			v[i] = vals[0]
		}
	}
	host, scheme, port, path, token := v[0], v[1], v[2], v[3], v[4]
	if token == "" {
		return nil, ErrMissingToken
	}
	for i, s := range v[:4] {
		if s == "" {
			return nil, fmt.Errorf("%w: %s", ErrMissingHeader, strings.ToLower(forwardedHeaders[i]))
		}
	}
	u, err := destination(scheme, host, port, path)
	if err != nil {
		return nil, err
	}
	return &forwardedRequest{token: token, path: path, url: u}, nil
}

// destination rebuilds the URL the sandbox requested as
// scheme://host:port + path, the way the official SDK does, and refuses
// headers that would smuggle anything else into it (user info, another
// host, another port).
func destination(scheme, host, port, path string) (*url.URL, error) {
	scheme = strings.ToLower(scheme)
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("%w: scheme is neither http nor https", ErrInvalidHeader)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return nil, fmt.Errorf("%w: port is not a number from 1 to 65535", ErrInvalidHeader)
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("%w: path does not start with /", ErrInvalidHeader)
	}
	hostport := host + ":" + port
	u, err := url.Parse(scheme + "://" + hostport + path)
	if err != nil || u.Host != hostport || u.User != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: host, port and path do not form a URL", ErrInvalidHeader)
	}
	u.Host = normalHost(scheme, hostport)
	return u, nil
}

// originOf returns scheme://host as a WHATWG URL's origin is written.
func originOf(scheme, host string) string {
	return scheme + "://" + normalHost(scheme, host)
}

// normalHost returns host in lower case, without the scheme's default port.
func normalHost(scheme, host string) string {
	host = strings.ToLower(host)
	switch scheme {
	case "https":
		return strings.TrimSuffix(host, ":443")
	case "http":
		return strings.TrimSuffix(host, ":80")
	}
	return host
}

// audience returns the forward URL a token for r must have been issued
// for: the URL r was received at, less the forwarded path at its end, with
// no trailing slash (the bare origin when nothing is left). The paths are
// compared after both have been cleaned of dot segments, as URL parsing in
// the official SDK does.
func audience(r *http.Request, origin, forwardedPath string) string {
	if origin == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		origin = originOf(scheme, r.Host)
	}
	root := &url.URL{Path: "/"}
	reqPath := root.ResolveReference(&url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath}).EscapedPath()
	reqPath = trimSlashes(reqPath)
	if fp, err := url.Parse(forwardedPath); err == nil {
		fwd := trimSlashes(root.ResolveReference(&url.URL{Path: fp.Path, RawPath: fp.RawPath}).EscapedPath())
		if fwd != "/" && strings.HasSuffix(reqPath, fwd) {
			reqPath = trimSlashes(reqPath[:len(reqPath)-len(fwd)])
		}
	}
	if reqPath == "/" {
		return origin
	}
	return origin + reqPath
}

// trimSlashes removes the trailing slashes of a path, leaving "/" for a
// path of slashes only.
func trimSlashes(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return "/"
	}
	return p
}
