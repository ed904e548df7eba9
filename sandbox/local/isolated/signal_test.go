package isolated_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A signal sent as soon as Start returns reaches the command, however
// early in the sandbox's set-up that is.
func TestIsolatedSignalAtOnce(t *testing.T) {
	requireLinux(t)
	t.Parallel()
	exectest.SignalAtOnce(t, newIsolated(t), t.TempDir(), 100)
}

// The same through the API: a client's kill right after its start is
// never lost.
func TestIsolatedSignalAtOnceThroughAPI(t *testing.T) {
	requireLinux(t)
	t.Parallel()
	srv := sandboxtest.NewServer(t, local.WithExecutor(newIsolated(t)))
	sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "signals"})
	require.NoError(t, err)
	exectest.SignalAtOnceThroughAPI(t, sb, 100)
}
