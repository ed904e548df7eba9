// Command credential-proxy is a backend that brokers a secret for
// sandboxes. A sandbox's network policy forwards its requests for
// api.example.com to this backend (a rule with a forwardURL); the backend
// checks the OIDC token Vercel attaches, adds the API key, and sends the
// request on. The sandbox never holds the key.
//
//	go run ./examples/credential-proxy
//
// It needs no credentials and nothing beyond this machine: it plays every
// part on loopback servers, Vercel's included. A local issuer stands in for
// https://oidc.vercel.com (an RSA key, its key set at /.well-known/jwks), a
// local API stands in for api.example.com, and the program sends the
// requests a forwarding network policy would. It shows a forwarded request
// accepted and sent on with the key, then a forged token, a sandbox of
// another team and a request without a token refused. A real broker drops
// the test issuer and names its own: Vercel's global issuer (the default)
// or, in the team issuer mode, https://oidc.vercel.com/<team> with
// proxy.WithTrustedIssuer.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/sbx-go/vercel-sandbox/sandbox/proxy"
)

func main() {
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatalf("credential-proxy: %v", err)
	}
}

// The team and project whose sandboxes the broker serves, and the secret it
// holds for them.
const (
	ourTeam    = "team_demo"
	ourProject = "prj_demo"
	apiKey     = "sk_demo_4f9a0c"
)

// run plays the demonstration and writes what happens to w.
func run(ctx context.Context, w io.Writer) error {
	out := &lockedWriter{w: w}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	iss, err := newIssuer()
	if err != nil {
		return err
	}
	issSrv, err := listen()
	if err != nil {
		return err
	}
	defer issSrv.close()
	iss.url = issSrv.url
	issSrv.serve(iss)
	out.printf("issuer    %s  (stands in for https://oidc.vercel.com; key set at /.well-known/jwks)\n", iss.url)

	api, err := listen()
	if err != nil {
		return err
	}
	defer api.close()
	api.serve(&upstreamAPI{log: out})
	out.printf("upstream  %s  (stands in for https://api.example.com; wants the API key)\n", api.url)

	b := &broker{routes: map[string]string{"api.example.com": api.url}, client: client, log: out}
	brokerSrv, err := listen()
	if err != nil {
		return err
	}
	defer brokerSrv.close()
	v, err := proxy.NewVerifier(
		proxy.WithTrustedIssuer(iss.url), // for this demonstration only
		proxy.WithOrigin(brokerSrv.url),  // the origin of the forwardURL below
		proxy.WithHTTPClient(client),     // fetches the issuer's key set
		proxy.WithInvalidRequestHandler(b.refuse),
	)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/hook/", v.Handler(b))
	brokerSrv.serve(mux)
	forwardURL := brokerSrv.url + "/hook"
	out.printf("broker    %s  (the network policy's forwardURL for api.example.com)\n\n", forwardURL)

	claims := func(team string) map[string]any {
		now := time.Now()
		return map[string]any{"iss": iss.url, "aud": forwardURL, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
			"team_id": team, "project_id": ourProject, "sandbox_id": "sbx_demo", "sandbox_name": "agent"}
	}
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	steps := []struct {
		title string
		token func() (string, error)
	}{
		{"a sandbox of our team", func() (string, error) { return iss.sign(iss.key, claims(ourTeam)) }},
		{"a forged token (signed with another key)", func() (string, error) { return iss.sign(forger, claims(ourTeam)) }},
		{"a sandbox of another team", func() (string, error) { return iss.sign(iss.key, claims("team_other")) }},
		{"no token (not forwarded by a network policy)", func() (string, error) { return "", nil }},
	}
	for i, s := range steps {
		token, err := s.token()
		if err != nil {
			return err
		}
		out.printf("%d. %s: POST https://api.example.com/v1/charges, without an API key\n", i+1, s.title)
		status, body, err := forward(ctx, client, forwardURL, "/v1/charges", token)
		if err != nil {
			return err
		}
		out.printf("   the sandbox gets %d %s\n", status, body)
	}
	return nil
}

// forward sends a request as a network policy forwards one: to the
// forwardURL with the path appended, the destination in the
// vercel-forwarded-* headers, and the sandbox's token.
func forward(ctx context.Context, client *http.Client, forwardURL, path, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, forwardURL+path, strings.NewReader(`{"amount":100}`))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Vercel-Forwarded-Scheme", "https")
	req.Header.Set("Vercel-Forwarded-Host", "api.example.com")
	req.Header.Set("Vercel-Forwarded-Port", "443")
	req.Header.Set("Vercel-Forwarded-Path", path)
	if token != "" {
		req.Header.Set("Vercel-Sandbox-Oidc-Token", token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// broker sends the requests of our sandboxes on to the API they name,
// with the API key added.
type broker struct {
	routes map[string]string // destination host → where its API is reached
	client *http.Client
	log    *lockedWriter
}

func (b *broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, _ := proxy.FromContext(r.Context())
	b.log.printf("   broker: token verified: team %s, project %s, sandbox %s (%s), for %s\n",
		f.TeamID, f.ProjectID, f.SandboxID, f.SandboxName, f.URL)
	// The token proves which sandbox sent the request, not that it is ours.
	if f.TeamID != ourTeam || f.ProjectID != ourProject {
		b.log.printf("   broker: not a sandbox of ours: refused\n")
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	base, ok := b.routes[f.URL.Host]
	if !ok {
		http.Error(w, "no credential for this host", http.StatusForbidden)
		return
	}
	target, err := url.Parse(base)
	if err != nil {
		http.Error(w, "bad route", http.StatusInternalServerError)
		return
	}
	target.Path, target.RawQuery = f.URL.Path, f.URL.RawQuery
	out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String(), r.Body)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	out.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	out.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := b.client.Do(out)
	if err != nil {
		http.Error(w, "upstream unreachable", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	b.log.printf("   broker: sent on with the API key: upstream answered %d\n", resp.StatusCode)
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 1<<20))
}

// refuse is the verifier's invalid-request handler: it logs the reason,
// which never holds the token, and answers 403.
func (b *broker) refuse(w http.ResponseWriter, _ *http.Request, err error) {
	b.log.printf("   broker: refused: %v\n", err)
	http.Error(w, "Forbidden", http.StatusForbidden)
}

// upstreamAPI stands in for api.example.com: it charges only callers with
// the API key.
type upstreamAPI struct{ log *lockedWriter }

func (u *upstreamAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+apiKey {
		u.log.printf("   upstream: no API key: 401\n")
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	u.log.printf("   upstream: %s %s with the API key: charged\n", r.Method, r.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"ch_1","amount":100}`)
}

// issuer stands in for Vercel's OIDC issuer: it signs tokens and serves
// its key set.
type issuer struct {
	url string
	key *rsa.PrivateKey
}

const keyID = "demo-key"

func newIssuer() (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &issuer{key: key}, nil
}

func (is *issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/.well-known/jwks" {
		http.NotFound(w, r)
		return
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: keyID, Algorithm: "RS256", Use: "sig"}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(set)
}

// sign returns claims signed with key under the issuer's key id.
func (is *issuer) sign(key *rsa.PrivateKey, claims map[string]any) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	obj, err := s.Sign(payload)
	if err != nil {
		return "", err
	}
	return obj.CompactSerialize()
}

// server is an HTTP server on a loopback port.
type server struct {
	url  string
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// listen takes a free loopback port, so that the server's URL is known
// before its handler is built.
func listen() (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &server{url: "http://" + ln.Addr().String(), ln: ln, done: make(chan struct{})}, nil
}

// serve starts serving h; close stops it.
func (s *server) serve(h http.Handler) {
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("credential-proxy: %s: %v", s.url, err)
		}
	}()
}

// close stops the server and waits for it. It closes the listener of a
// server that never started.
func (s *server) close() {
	if s.srv == nil {
		_ = s.ln.Close()
		return
	}
	_ = s.srv.Close()
	<-s.done
}

// lockedWriter serialises the lines written from the servers' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, a...)
}
