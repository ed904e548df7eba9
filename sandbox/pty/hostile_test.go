package pty_test

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/pty"
)

// hostileToken is the ticket's token in the tests of hostile servers. Its
// characters differ in every encoding a server might echo it in.
const hostileToken = "Tok_S3cr3t/Key+Val=ue&x<y>"

// wsURL is the ws:// form of an httptest server's URL.
func wsURL(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") }

// elsewhere is another origin: it records whatever reaches it, accepting
// WebSockets and reading their frames.
type elsewhere struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.record(fmt.Sprintf("%s %s Referer=%q", r.Method, r.URL, r.Referer()))
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			e.record("frame " + string(data))
		}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *elsewhere) record(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, s)
}

func (e *elsewhere) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// A server that answers the handshake with a redirect never gets the
// client to another place: not the token (net/http would send the URL,
// query and all, as the Referer), not the start frame (the command's
// environment), not the keystrokes. The redirect is refused whatever its
// status, target or the caller's CheckRedirect, with the status and the
// target's origin.
func TestRedirectIsNeverFollowed(t *testing.T) {
	t.Parallel()
	other := newElsewhere(t)
	for _, tc := range []struct {
		name     string
		code     int
		location func(self string) string
		origin   func(self string) string
		client   *http.Client
	}{
		{name: "302 to another origin", code: http.StatusFound,
			location: func(string) string { return other.srv.URL + "/pty" },
			origin:   func(string) string { return other.srv.URL }},
		{name: "307 to another origin's ws URL, the token in its query", code: http.StatusTemporaryRedirect,
			location: func(string) string { return wsURL(other.srv) + "/pty?token=" + url.QueryEscape(hostileToken) },
			origin:   func(string) string { return wsURL(other.srv) }},
		{name: "308 to another origin", code: http.StatusPermanentRedirect,
			location: func(string) string { return other.srv.URL + "/pty" },
			origin:   func(string) string { return other.srv.URL }},
		{name: "301 to another origin", code: http.StatusMovedPermanently,
			location: func(string) string { return other.srv.URL + "/" },
			origin:   func(string) string { return other.srv.URL }},
		{name: "303 to the same origin", code: http.StatusSeeOther,
			location: func(string) string { return "/elsewhere?x=1" },
			origin:   func(self string) string { return self }},
		{name: "302 with a caller's client that follows everything", code: http.StatusFound,
			location: func(string) string { return other.srv.URL + "/pty" },
			origin:   func(string) string { return other.srv.URL },
			client:   &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			hits := 0
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits++
				mu.Unlock()
				http.Redirect(w, r, tc.location(srv.URL), tc.code)
			}))
			t.Cleanup(srv.Close)
			ticket := sandbox.Interactive{URL: wsURL(srv) + "/pty", Token: hostileToken}

			// A bound that catches a hang: net/http follows a redirect
			// loop forever under a CheckRedirect that allows it.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := pty.Dial(ctx, ticket, &pty.Cmd{
				Env:        map[string]string{"API_KEY": "sk-live-do-not-leak"},
				Stdin:      strings.NewReader("secret keystrokes\n"),
				HTTPClient: tc.client,
			})
			if err == nil {
				_ = s.Close()
			}
			var de *pty.DialError
			require.ErrorAs(t, err, &de, "the redirect is refused")
			assert.Equal(t, tc.code, de.StatusCode)
			assert.Equal(t, tc.origin(srv.URL), de.Location, "the target's origin, without path or query")
			assert.Contains(t, err.Error(), tc.origin(srv.URL))
			assert.NotContains(t, err.Error(), "?")
			assertNoToken(t, err, hostileToken)
			assert.Empty(t, other.seen(), "nothing reached the other origin")
			mu.Lock()
			assert.Equal(t, 1, hits, "the redirect is not followed to the same origin either")
			mu.Unlock()
		})
	}
}

// tokenForms are the encodings a server may echo a token in.
func tokenForms(token string) map[string]string {
	js, _ := json.Marshal(token)
	var pct strings.Builder
	for i := 0; i < len(token); i++ {
		fmt.Fprintf(&pct, "%%%02X", token[i])
	}
	return map[string]string{
		"as is":           token,
		"upper case":      strings.ToUpper(token),
		"lower case":      strings.ToLower(token),
		"query-escaped":   url.QueryEscape(token),
		"path-escaped":    url.PathEscape(token),
		"every byte":      pct.String(),
		"JSON":            strings.Trim(string(js), `"`),
		"Go-quoted":       strings.Trim(strconv.Quote(token), `"`),
		"base64":          base64.StdEncoding.EncodeToString([]byte(token)),
		"base64url":       base64.RawURLEncoding.EncodeToString([]byte(token)),
		"base64, shifted": base64.StdEncoding.EncodeToString([]byte("u:" + token))[4:],
	}
}

// assertNoToken checks that no error in err's tree, nor what it prints,
// holds the token in any case or encoding, or 8 characters of it in a row.
func assertNoToken(t *testing.T, err error, token string) {
	t.Helper()
	var texts []string
	var walk func(e error)
	walk = func(e error) {
		if e == nil {
			return
		}
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e))
		var de *pty.DialError
		if errors.As(e, &de) {
			texts = append(texts, de.URL, de.Location)
		}
		var xe *pty.DisconnectError
		if errors.As(e, &xe) {
			texts = append(texts, xe.Reason)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		}
	}
	walk(err)
	forms := tokenForms(token)
	for i := 0; i+8 <= len(token); i++ {
		forms[fmt.Sprintf("characters %d-%d", i, i+8)] = token[i : i+8]
	}
	for _, text := range texts {
		low := strings.ToLower(text)
		for name, form := range forms {
			if strings.Contains(low, strings.ToLower(form)) {
				t.Errorf("the token (%s) shows in %q", name, text)
				break
			}
		}
	}
}

// hostileTerminal serves one WebSocket, checking the token, and hands it
// to play; it returns the ticket.
func hostileTerminal(t *testing.T, play func(w http.ResponseWriter, r *http.Request)) sandbox.Interactive {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != hostileToken {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		play(w, r)
	}))
	t.Cleanup(srv.Close)
	return sandbox.Interactive{URL: wsURL(srv) + "/pty", Token: hostileToken}
}

// dialAndWait dials ticket and, when the handshake succeeds, waits for the
// session: what fails is in one error either way.
func dialAndWait(t *testing.T, ticket sandbox.Interactive) error {
	t.Helper()
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	if err != nil {
		return err
	}
	_, err = s.Wait()
	return err
}

// A server that echoes the token, in whatever case or encoding, in its
// close reason never gets it into an error: the reason is shown with the
// token hidden, and the error chain holds no error that shows it.
func TestCloseReasonNeverShowsTheToken(t *testing.T) {
	t.Parallel()
	forms := tokenForms(hostileToken)
	forms["cut short"] = hostileToken[:12]
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reason := "bad ticket " + form
			require.LessOrEqual(t, len(reason), 123, "a close reason fits a control frame")
			t.Run("after the start frame", func(t *testing.T) {
				ticket := hostileTerminal(t, func(w http.ResponseWriter, r *http.Request) {
					c, err := websocket.Accept(w, r, nil)
					if err != nil {
						return
					}
					defer c.CloseNow()
					_, _, _ = c.Read(r.Context())
					_ = c.Close(websocket.StatusPolicyViolation, reason)
				})
				err := dialAndWait(t, ticket)
				var de *pty.DisconnectError
				require.ErrorAs(t, err, &de)
				assert.Equal(t, int(websocket.StatusPolicyViolation), de.CloseStatus)
				assert.True(t, strings.HasPrefix(de.Reason, "bad ticket "), "the rest of the reason is kept: %q", de.Reason)
				assertNoToken(t, err, hostileToken)
			})
			t.Run("before the start frame", func(t *testing.T) {
				ticket := hostileTerminal(t, func(w http.ResponseWriter, r *http.Request) {
					c, err := websocket.Accept(w, r, nil)
					if err != nil {
						return
					}
					defer c.CloseNow()
					_ = c.Close(websocket.StatusPolicyViolation, reason)
				})
				err := dialAndWait(t, ticket)
				require.ErrorIs(t, err, pty.ErrStreamEnded)
				assertNoToken(t, err, hostileToken)
			})
		})
	}
}

// A server that echoes the token in a refused handshake (its body and
// headers), or case-altered in the headers of a 101 that the WebSocket
// layer then rejects (and quotes), never gets it into an error.
func TestHandshakeNeverShowsTheToken(t *testing.T) {
	t.Parallel()
	upper, lower := strings.ToUpper(hostileToken), strings.ToLower(hostileToken)
	// switching answers 101 with the given header lines, as a hostile
	// server may: the client checks them and fails.
	switching := func(lines ...string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\n" + strings.Join(lines, "\r\n") + "\r\n\r\n")
			_ = rw.Flush()
		}
	}
	for name, play := range map[string]func(w http.ResponseWriter, r *http.Request){
		"401 echoing the token": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Echo", upper)
			w.Header().Set("Www-Authenticate", `Bearer error="`+lower+`"`)
			http.Error(w, "token "+hostileToken+" is "+url.QueryEscape(upper)+" "+r.URL.RawQuery, http.StatusUnauthorized)
		},
		"500 echoing the query": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, strings.ToUpper(r.URL.String()), http.StatusInternalServerError)
		},
		"101 with the token as Sec-WebSocket-Accept": switching(
			"Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: "+upper),
		"101 with the token as Upgrade": switching(
			"Upgrade: "+lower, "Connection: Upgrade"),
		"101 with the token as Connection": switching(
			"Upgrade: websocket", "Connection: "+url.QueryEscape(upper)),
		"101 with the token as Sec-WebSocket-Protocol": func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Sec-WebSocket-Key")
			switching("Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: "+acceptKey(key),
				"Sec-WebSocket-Protocol: "+upper)(w, r)
		},
		"101 with the token as an extension": func(w http.ResponseWriter, r *http.Request) {
			key := r.Header.Get("Sec-WebSocket-Key")
			switching("Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: "+acceptKey(key),
				"Sec-WebSocket-Extensions: permessage-deflate, "+lower)(w, r)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := dialAndWait(t, hostileTerminal(t, play))
			var de *pty.DialError
			require.ErrorAs(t, err, &de)
			assertNoToken(t, err, hostileToken)
		})
	}
}

// acceptKey is the Sec-WebSocket-Accept that answers key (RFC 6455).
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// countingTransport counts the requests that reach it and fails them.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return nil, errors.New("no network in this test")
}

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// The ticket goes in clear text only to the local machine, by the rule
// that sandbox.NewClient applies to a plain-HTTP base URL: a ws:// (or
// http://) URL to any other host is refused before anything is sent.
func TestPlainWebSocketOnlyToLoopback(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"ws://sandbox.example/pty", "http://sandbox.example/pty", "ws://10.0.0.1:8080/pty",
		"ws://api.localhost/pty", "ws://localhost./pty", "ws://0.0.0.0/pty", "ws://[::]/pty",
	} {
		rt := &countingTransport{}
		_, err := pty.Dial(t.Context(), sandbox.Interactive{URL: raw, Token: hostileToken},
			&pty.Cmd{HTTPClient: &http.Client{Transport: rt}})
		require.ErrorIs(t, err, sandbox.ErrInsecureURL, raw)
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput, raw)
		var ie *sandbox.InsecureURLError
		require.ErrorAs(t, err, &ie, raw)
		assert.Equal(t, "Interactive.URL", ie.Field)
		assert.Zero(t, rt.count(), "nothing is sent to %s", raw)
		assertNoToken(t, err, hostileToken)
	}

	// TLS protects the ticket on the way: wss:// goes anywhere.
	rt := &countingTransport{}
	_, err := pty.Dial(t.Context(), sandbox.Interactive{URL: "wss://sandbox.example/pty", Token: hostileToken},
		&pty.Cmd{HTTPClient: &http.Client{Transport: rt}})
	var de *pty.DialError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 1, rt.count())
	assertNoToken(t, err, hostileToken)

	// The local machine by name: dialled at 127.0.0.1 without a lookup.
	ticket := fakeTerminal(t, func(ctx context.Context, c *websocket.Conn, _ map[string]any) {
		sendText(ctx, c, `{"type":"exit","code":3}`)
	})
	ticket.URL = strings.Replace(ticket.URL, "ws://127.0.0.1:", "ws://LocalHost:", 1)
	s, err := pty.Dial(t.Context(), ticket, &pty.Cmd{})
	require.NoError(t, err)
	code, err := s.Wait()
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	// A transport whose dialing the rule cannot see might look the name
	// up: refused, as sandbox.NewClient refuses it.
	_, err = pty.Dial(t.Context(), ticket, &pty.Cmd{HTTPClient: &http.Client{Transport: &countingTransport{}}})
	assert.ErrorIs(t, err, sandbox.ErrInsecureURL)
}
