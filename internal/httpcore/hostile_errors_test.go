package httpcore

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// A hostile server answers 400 with the token it was sent, written in
// every way a body may write it. No form of the token, nor any part of
// one, may reach the error.
func TestErrorBodyHidesEveryEncodingOfTheToken(t *testing.T) {
	t.Parallel()
	const token = "tok/en+canary=secret&123"
	jsonOf := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	every := func(format string) string {
		var b strings.Builder
		for i := 0; i < len(token); i++ {
			fmt.Fprintf(&b, format, token[i])
		}
		return b.String()
	}
	forms := map[string]string{
		"raw":                 token,
		"JSON":                jsonOf(token),
		"JSON with \\/":       strings.ReplaceAll(jsonOf(token), "/", `\/`),
		"JSON \\u002b":        strings.ReplaceAll(token, "+", `\u002b`),
		"JSON, every byte":    every(`\u%04X`),
		"JSON twice":          jsonOf(jsonOf(token)),
		"query escaped":       url.QueryEscape(token),
		"lower-case hex":      strings.ToLower(url.QueryEscape(token)),
		"URL, every byte":     every("%%%02x"),
		"URL twice":           url.QueryEscape(url.QueryEscape(token)),
		"JSON in a URL":       url.QueryEscape(strings.ReplaceAll(jsonOf(token), "/", `\/`)),
		"split by an escape":  strings.Replace(token, "canary", `can\u0061ry`, 1),
		"bearer, JSON-quoted": "Bearer " + strings.ReplaceAll(token, "/", `\/`),
	}
	for name, form := range forms {
		for _, ct := range []string{"text/plain", "text/html", ""} {
			t.Run(name+" "+ct, func(t *testing.T) {
				t.Parallel()
				srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int32) {
					if ct != "" {
						w.Header().Set("Content-Type", ct)
					}
					w.Header().Set("X-Vercel-Id", "iad1::"+form)
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, "rejected token: "+form+"; try again")
				})
				c := newClient(t, srv.URL, withProvider(staticProvider(token, "team_prov", "prj_prov")))
				err := c.JSON(t.Context(), &Call{Method: "GET", Path: "/v2/x"}, nil)
				var ae *apierr.Error
				require.ErrorAs(t, err, &ae)
				hidden := "[REDACTED]"
				if strings.HasPrefix(form, "Bearer ") {
					hidden = "Bearer [REDACTED]"
				}
				assert.Equal(t, "rejected token: "+hidden+"; try again", ae.Message)
				assert.Equal(t, "iad1::"+hidden, ae.RequestID)
				assert.NotContains(t, err.Error(), "canary")
				assert.NotContains(t, err.Error(), "secret")
			})
		}
	}
	// The same in a JSON error envelope, and where the excerpt of a long
	// body is cut.
	for name, form := range forms {
		t.Run(name+" in JSON and at the cut", func(t *testing.T) {
			t.Parallel()
			srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int32) {
				if r.URL.Path == "/v2/json" {
					writeError(w, http.StatusBadRequest, "bad_token", "rejected token: "+form)
					return
				}
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, strings.Repeat(".", 500)+form+strings.Repeat(".", 500))
			})
			c := newClient(t, srv.URL, withProvider(staticProvider(token, "team_prov", "prj_prov")))
			for _, path := range []string{"/v2/json", "/v2/long"} {
				err := c.JSON(t.Context(), &Call{Method: "GET", Path: path}, nil)
				require.Error(t, err)
				assert.NotContains(t, err.Error(), "canary", path)
				assert.NotContains(t, err.Error(), "secret", path)
				assert.NotContains(t, err.Error(), "123", path)
			}
		})
	}
}
