package sandbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// On hosted Vercel a sandbox created from an image, or with neither image
// nor runtime, works in /vercel, with HOME there too; the client takes the
// session's word for it.
func TestImageSandboxWorksInVercel(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts []local.Option
		cwd  string
	}{
		"hosted":   {nil, "/vercel"},
		"friendly": {[]local.Option{local.WithFriendly()}, "/vercel/sandbox"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			e.handle("where", sandboxtest.HandlerFunc(func(_ context.Context, cmd *local.Cmd, _ <-chan int) int {
				fmt.Fprintf(cmd.Stdout, "%s %s", cmd.Cwd, cmd.Env["HOME"])
				return 0
			}))
			sb, err := e.c.Create(t.Context(), sandbox.CreateParams{Image: "ubuntu:24.04"})
			require.NoError(t, err)
			assert.Equal(t, tc.cwd, sb.Cwd())

			out, err := sb.Command("where").Output(t.Context())
			require.NoError(t, err)
			home := ""
			if name == "hosted" {
				home = "/vercel"
			}
			assert.Equal(t, tc.cwd+" "+home, string(out), "commands start in the session's cwd")

			require.NoError(t, sb.FS().WriteFile(t.Context(), "notes.txt", []byte("hi"), 0o644))
			got, err := sb.FS().ReadFile(t.Context(), tc.cwd+"/notes.txt")
			require.NoError(t, err, "a relative path resolves against the session's cwd")
			assert.Equal(t, "hi", string(got))

			runtime, err := e.c.Create(t.Context(), sandbox.CreateParams{Runtime: "node22"})
			require.NoError(t, err)
			assert.Equal(t, "/vercel/sandbox", runtime.Cwd(), "a runtime sandbox keeps /vercel/sandbox")

			plain, err := e.c.Create(t.Context(), sandbox.CreateParams{})
			require.NoError(t, err)
			assert.Equal(t, tc.cwd, plain.Cwd(), "a sandbox with neither image nor runtime works where an image one does")
		})
	}
}
