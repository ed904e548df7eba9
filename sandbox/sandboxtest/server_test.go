package sandboxtest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

func TestRequestsTo(t *testing.T) {
	t.Parallel()
	srv := sandboxtest.NewServer(t)
	srv.Script().Handle(sandboxtest.MatchName("true"), sandboxtest.Reply{})
	ctx := hygieneCtx(t)
	sb, err := srv.Client().Create(ctx, sandbox.CreateParams{Name: "filtered"})
	require.NoError(t, err)
	_, err = sb.Command("true").Run(ctx)
	require.NoError(t, err)
	require.NoError(t, sb.Delete(ctx, sandbox.DeleteParams{}))

	assert.Len(t, srv.RequestsTo("POST", "/v2/sandboxes/sessions/*/cmd"), 1)
	assert.Len(t, srv.RequestsTo("", "/v2/sandboxes/sessions/**"), 1)
	assert.Len(t, srv.RequestsTo("DELETE", "/v2/sandboxes/filtered"), 1)
	assert.Len(t, srv.RequestsTo("*", "*"), len(srv.Requests()))
}
