package fault_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/fault"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A fault makes the next command start fail with a 500 before the command
// runs. The client does not re-send a command whose outcome it cannot
// know, so the caller sees an error that says so, and the fake proves that
// nothing ran. In a test, sandboxtest.NewServer(t) installs an Injector
// and replaces the New, httptest and Close lines.
func ExampleInjector_Inject() {
	faults := fault.NewInjector()
	script := sandboxtest.NewScript().Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	srv, err := local.New(append(faults.Options(), local.WithExecutor(script))...)
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	client, err := sandbox.NewClient(sandbox.WithBaseURL(ts.URL),
		sandbox.WithToken(srv.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	sb, err := client.Create(ctx, sandbox.CreateParams{Name: "faulty"})
	if err != nil {
		panic(err)
	}

	h := faults.Inject(fault.Fault{
		Method: "POST",
		Path:   "/v2/sandboxes/sessions/*/cmd",
		Status: 500,
		Times:  1,
	})
	_, err = sb.Command("echo", "hello").Run(ctx)
	fmt.Println("outcome unknown:", errors.Is(err, sandbox.ErrUnknownResult))
	fmt.Println("commands run:", srv.CommandCount(), "fault hits:", h.Hits())

	// The fault is spent; the caller decides to run the command again.
	out, err := sb.Command("echo", "hello").Output(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s", out)
	fmt.Println("commands run:", srv.CommandCount())

	// The same fault in its text form, as the standalone server's --fault
	// flag takes it.
	fmt.Println(h.Fault())
	// Output:
	// outcome unknown: true
	// commands run: 0 fault hits: 1
	// hello
	// commands run: 1
	// POST /v2/sandboxes/sessions/*/cmd status=500 times=1
}

// RateLimit answers a burst of requests with 429 and a Retry-After header.
// Within the client's default Retry-After limit (20 s) the client waits and
// retries; a longer one is returned at once as ErrRateLimited.
func ExampleRateLimit() {
	faults := fault.NewInjector()
	srv, err := local.New(faults.Options()...)
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	defer srv.Close()
	client, err := sandbox.NewClient(sandbox.WithBaseURL(ts.URL),
		sandbox.WithToken(srv.Token()), sandbox.WithTeam(local.TeamID), sandbox.WithProject(local.ProjectID))
	if err != nil {
		panic(err)
	}

	faults.Inject(fault.RateLimit(1, 60*time.Second))
	_, err = client.Get(context.Background(), "any")
	var apiErr *sandbox.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(errors.Is(err, sandbox.ErrRateLimited), apiErr.StatusCode, apiErr.RetryAfter)
	}
	// Output:
	// true 429 1m0s
}
