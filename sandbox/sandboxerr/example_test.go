package sandboxerr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxerr"
)

// A failed call returns an error that errors.Is matches against the
// sentinels of package sandbox and errors.As unwraps into its type, under
// either of its two names.
func Example() {
	// A server that knows no sandbox.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Vercel-Id", "iad1::example")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"Sandbox not found"}}`)
	}))
	defer srv.Close()

	client, err := sandbox.NewClient(sandbox.WithBaseURL(srv.URL), sandbox.WithToken("token"),
		sandbox.WithTeam("team_1"), sandbox.WithProject("prj_1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.Get(context.Background(), "my-sandbox")

	fmt.Println(errors.Is(err, sandbox.ErrNotFound))
	var apiErr *sandboxerr.APIError // or *sandbox.APIError: the same type
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.Message, apiErr.RequestID)
	}
	// Output:
	// true
	// 404 not_found Sandbox not found iad1::example
}
