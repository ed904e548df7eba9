//go:build unix

package hostexec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/internal/exectest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// A signal sent as soon as Start returns reaches the command.
func TestSignalAtOnce(t *testing.T) {
	t.Parallel()
	exectest.SignalAtOnce(t, hostexec.New(), t.TempDir(), 100)
}

// The same through the API, in both of the server's modes: hosted
// Vercel's kill signals the command's process alone.
func TestSignalAtOnceThroughAPI(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []local.Option
	}{{"hosted", nil}, {"friendly", []local.Option{local.WithFriendly()}}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			srv := sandboxtest.NewServer(t, append([]local.Option{local.WithExecutor(hostexec.New())}, mode.opts...)...)
			sb, err := srv.Client().Create(t.Context(), sandbox.CreateParams{Name: "signals"})
			require.NoError(t, err)
			exectest.SignalAtOnceThroughAPI(t, sb, 100)
		})
	}
}
