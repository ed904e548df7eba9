package local_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// statusWith answers the status of GET /v2/sandboxes on srv with the
// bearer token tok ("" sends no Authorization header).
func statusWith(t *testing.T, srv *local.Server, tok string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+"/v2/sandboxes", nil)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestListen(t *testing.T) {
	t.Parallel()
	script := sandboxtest.NewScript().Handle(sandboxtest.MatchName("echo"), sandboxtest.EchoHandler())
	srv, client, err := local.Listen(t.Context(), local.WithExecutor(script))
	require.NoError(t, err)
	defer srv.Close()
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+$`, srv.URL())

	sb, err := client.Create(t.Context(), sandbox.CreateParams{Timeout: time.Minute})
	require.NoError(t, err)
	out, err := sb.Command("echo", "hi").Output(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(out))
	assert.Equal(t, local.TeamID, srv.Requests()[0].Query.Get("teamId"))

	// The server takes its own token only, drawn at random: a program
	// that embeds it is not open to whoever reaches the port.
	assert.NotEqual(t, local.DefaultToken, srv.Token())
	assert.NotEqual(t, 2, strings.Count(srv.Token(), "."), "the token must not look like a JWT")
	assert.Equal(t, 200, statusWith(t, srv, srv.Token()))
	assert.Equal(t, 403, statusWith(t, srv, local.DefaultToken))
	assert.Equal(t, 403, statusWith(t, srv, "anything"))
	srv2, _, err := local.Listen(t.Context())
	require.NoError(t, err)
	defer srv2.Close()
	assert.NotEqual(t, srv.Token(), srv2.Token(), "each server draws its own token")

	// Close stops the sandboxes and the listener.
	url := srv.URL()
	srv.Close()
	got, ok := srv.Sandbox(sb.Name())
	require.True(t, ok)
	assert.Equal(t, "stopped", got.Status)
	_, err = http.Get(url + "/v2/sandboxes")
	assert.Error(t, err, "the server no longer listens")
}

func TestListenRefusals(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	srv, client, err := local.Listen(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, srv)
	assert.Nil(t, client)

	srv, client, err = local.Listen(t.Context(), local.WithStopDelay(-1))
	var in *sandbox.InputError
	require.ErrorAs(t, err, &in)
	assert.Equal(t, "WithStopDelay", in.Field)
	assert.Nil(t, srv)
	assert.Nil(t, client)
}

func TestTokenOptions(t *testing.T) {
	t.Parallel()
	listen := func(t *testing.T, opts ...local.Option) *local.Server {
		srv, _, err := local.Listen(t.Context(), opts...)
		require.NoError(t, err)
		t.Cleanup(srv.Close)
		return srv
	}
	t.Run("WithAnyToken", func(t *testing.T) {
		t.Parallel()
		srv := listen(t, local.WithAnyToken())
		assert.Equal(t, local.DefaultToken, srv.Token())
		assert.Equal(t, 200, statusWith(t, srv, "anything"))
		assert.Equal(t, 403, statusWith(t, srv, ""), "a token is still needed")
	})
	t.Run("WithToken wins", func(t *testing.T) {
		t.Parallel()
		srv := listen(t, local.WithAnyToken(), local.WithToken("secret"))
		assert.Equal(t, "secret", srv.Token())
		assert.Equal(t, 200, statusWith(t, srv, "secret"))
		assert.Equal(t, 403, statusWith(t, srv, "anything"))
	})
	t.Run("sandboxtest takes any", func(t *testing.T) {
		t.Parallel()
		srv := sandboxtest.NewServer(t)
		assert.Equal(t, local.DefaultToken, srv.Token())
		assert.Equal(t, 200, statusWith(t, srv.Server, "anything"))
	})
}

// A client comes from Listen, once the server listens: a *Server has no
// method that could hand one out before (it used to panic then).
func TestNoClientBeforeListening(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[*local.Server]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		for j := range m.Type.NumOut() {
			assert.NotEqual(t, reflect.TypeFor[*sandbox.Client](), m.Type.Out(j), "Server.%s returns a client", m.Name)
		}
	}
}
