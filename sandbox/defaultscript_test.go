package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/command"
	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/local/hostexec"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestDefaultScriptExecutor(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	require.NotNil(t, srv.Script())
	srv.Script().Handle(sandboxtest.MatchName("greet"), sandboxtest.Reply{Stdout: "hello\n"})
	ctx := context.Background()
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{})
	require.NoError(t, err)

	out, err := sb.Command("greet").Output(ctx)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(out))

	_, err = sb.Command("unknown").Output(ctx)
	var ee *command.ExitError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, 127, ee.ExitCode())
	assert.Len(t, srv.Script().Unmatched(), 1)

	other := sandboxtest.NewServer(t, local.WithExecutor(hostexec.New()))
	assert.Nil(t, other.Script())
}
