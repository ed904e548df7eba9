package sandboxerr_test

import (
	"errors"
	"fmt"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLimitErrors checks that each limit error matches its own sentinel
// only (sandboxerr.InsecureURLError is also invalid input) and says what a reader
// needs: the call and the limit, the listing and the page, the field
// and the host.
func TestLimitErrors(t *testing.T) {
	t.Parallel()
	sentinels := []error{sandbox.ErrResponseTooLarge, sandbox.ErrRepeatedCursor, sandbox.ErrInsecureURL, sandbox.ErrInvalidInput, sandbox.ErrDecode}
	for _, tc := range []struct {
		err  error
		is   []error
		says []string
	}{
		{&sandboxerr.ResponseTooLargeError{Op: "list sandboxes", Method: "GET", Path: "/v2/sandboxes", StatusCode: 200, Limit: 8 << 20},
			[]error{sandbox.ErrResponseTooLarge}, []string{"list sandboxes", "GET /v2/sandboxes", "8388608"}},
		{&sandboxerr.ResponseTooLargeError{Method: "POST", Path: "/x", Limit: 10}, []error{sandbox.ErrResponseTooLarge}, []string{"vercel sandbox: POST /x", "10 bytes"}},
		{&sandboxerr.RepeatedCursorError{Op: "list drives", Cursor: "c1", Pages: 2}, []error{sandbox.ErrRepeatedCursor}, []string{"list drives", "page 2"}},
		{&sandboxerr.InsecureURLError{Field: "BaseURL", Scheme: "http", Host: "api.localhost:3000"},
			[]error{sandbox.ErrInsecureURL, sandbox.ErrInvalidInput}, []string{"BaseURL", "http://api.localhost:3000", "127.0.0.0/8"}},
	} {
		wrapped := fmt.Errorf("wrapped: %w", tc.err)
		for _, s := range sentinels {
			want := false
			for _, w := range tc.is {
				want = want || w == s
			}
			assert.Equal(t, want, errors.Is(wrapped, s), "%T vs %v", tc.err, s)
		}
		for _, part := range tc.says {
			assert.Contains(t, tc.err.Error(), part)
		}
	}
}
