package apierr_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/sbx-go/vercel-sandbox/auth"
	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/httpcore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fuzzToken is the token the client sends; no error may show it.
const fuzzToken = "tok_FUZZ_9c41d7e2b05a4f3d8e6a"

// FuzzDecodeError feeds arbitrary non-2xx answers (status, body,
// Retry-After and X-Vercel-Id headers) to the client's error decoder and
// checks that it never panics, keeps the status and the sentinel that goes
// with it, bounds and sanitises the message, reads Retry-After as a
// non-negative duration, and never shows the token the request carried,
// even when the server echoes it.
func FuzzDecodeError(f *testing.F) {
	f.Add(404, []byte(`{"error":{"code":"not_found","message":"Sandbox not found"}}`), "", "iad1::abc-1")
	f.Add(410, []byte(`{"error":{"code":"sandbox_stopped","message":"stopped"}}`), "", "")
	f.Add(422, []byte(`{"error":{"code":"sandbox_stopping"}}`), "", "")
	f.Add(429, []byte(`{"error":{"code":"rate_limited","message":"slow down"}}`), "7", "")
	f.Add(429, []byte(``), "Wed, 21 Oct 2015 07:28:00 GMT", "")
	f.Add(503, []byte(`<html><body>Bad gateway</body></html>`), "1e300", "")
	f.Add(500, []byte("\xff\xfe\x00 not utf-8"), "NaN", "")
	f.Add(401, []byte(`{"error":{"code":"unauthorized","message":"bad token `+fuzzToken+`"}}`), "", "")
	f.Add(403, []byte(`{"error":{"code":"forbidden","message":"tok_FUZZ\u005f9c41d7e2b05a4f3d8e6a"}}`), "", "")
	f.Add(400, []byte("Authorization: Bearer "+fuzzToken), "", fuzzToken)
	f.Add(502, []byte(strings.Repeat("x", 505)+fuzzToken), "", "")
	f.Add(409, []byte(`{"error":null}`), "-3", "")
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter, requestID string) {
		status = 300 + int(uint(status)%700) // any non-2xx three-digit status
		c, err := httpcore.New(httpcore.Config{
			BaseURL:  "https://api.example.test",
			Provider: auth.Static(auth.Credentials{Token: fuzzToken, TeamID: "team_1", ProjectID: "prj_1"}),
			Retry:    httpcore.RetryPolicy{MaxRetries: -1},
			Transport: httpcore.RoundTripFunc(func(r *http.Request) (*http.Response, error) {
				if got := r.Header.Get("Authorization"); got != "Bearer "+fuzzToken {
					t.Fatalf("Authorization header %q", got)
				}
				h := http.Header{}
				h["Retry-After"] = []string{retryAfter}
				h["X-Vercel-Id"] = []string{requestID}
				return &http.Response{StatusCode: status, Header: h, Request: r,
					Body: io.NopCloser(bytes.NewReader(body))}, nil
			}),
		})
		if err != nil {
			t.Fatal(err)
		}
		err = c.JSON(context.Background(), &httpcore.Call{Method: "GET", Path: "/v1/sandboxes/sbx_1"}, nil)
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			t.Fatalf("got %T %v, want *apierr.Error", err, err)
		}
		if ae.StatusCode != status {
			t.Fatalf("status %d, want %d", ae.StatusCode, status)
		}
		if ae.Attempts != 1 {
			t.Errorf("attempts %d, want 1", ae.Attempts)
		}
		for sentinel, want := range map[error]bool{
			apierr.ErrNotFound:     status == 404,
			apierr.ErrGone:         status == 410,
			apierr.ErrRateLimited:  status == 429,
			apierr.ErrUnauthorized: status == 401,
			apierr.ErrForbidden:    status == 403,
			apierr.ErrBadRequest:   status == 400,
			apierr.ErrConflict:     status == 409,
			apierr.ErrServer:       status >= 500,
		} {
			if errors.Is(err, sentinel) != want {
				t.Errorf("errors.Is(err, %v) = %v for status %d", sentinel, !want, status)
			}
		}
		if ae.RetryAfter < 0 {
			t.Errorf("RetryAfter %v from %q", ae.RetryAfter, retryAfter)
		}
		if !utf8.ValidString(ae.Message) {
			t.Errorf("message is not valid UTF-8: %q", ae.Message)
		}
		if len(ae.Message) > 64<<10 {
			t.Errorf("message of %d bytes", len(ae.Message))
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", ae), fmt.Sprintf("%#v", ae), ae.Code, ae.Message, ae.RequestID} {
			if strings.Contains(s, fuzzToken) {
				t.Fatalf("the token shows in %q", s)
			}
		}
	})
}
