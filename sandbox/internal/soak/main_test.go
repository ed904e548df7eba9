package soak_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The test binary is also the local API the soak runs against, in a
	// process of its own, so that what the test measures is the client's.
	if os.Getenv(serveEnv) != "" {
		os.Exit(serve())
	}
	goleak.VerifyTestMain(m)
}
