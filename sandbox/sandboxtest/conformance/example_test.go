package conformance_test

import (
	"fmt"
	"testing"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest/conformance"
)

// Run takes a *testing.T, so this example shows the test to
// write rather than running it. The fake below runs real shell commands and
// reproducible ids; the same call with a client aimed elsewhere checks
// that API instead.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		srv := sandboxtest.NewServer(t,
			local.WithExecutor(hostexec.New()),
			local.WithSeed(1),
		)
		srv.CheckLeaks()
		conformance.Run(t, func(*testing.T) *sandbox.Client { return srv.Client() }, conformance.Params{Prefix: "myservice", Skip: []string{conformance.ScenarioResume}})
	}
	_ = testConformance
}

func ExampleScenarios() {
	fmt.Println(conformance.Scenarios())
	// Output: [lifecycle attached detached files resume errors filesystem users drives snapshot-tree hosted]
}
