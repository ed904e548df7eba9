package sandbox_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
)

func TestOpenInteractiveNeedsATerminalExecutor(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // a scripted executor runs no terminals
	sb := e.create("")
	_, err := sb.OpenInteractive(t.Context())
	require.ErrorIs(t, err, sandbox.ErrBadRequest)
}

func TestOpenInteractiveTicket(t *testing.T) {
	t.Parallel()
	e := newLocalEnv(t)
	sb := e.create("")
	ticket, err := sb.OpenInteractive(t.Context())
	require.NoError(t, err)
	assert.Regexp(t, `^ws://127\.0\.0\.1:\d+/`, ticket.URL)
	require.NotEmpty(t, ticket.Token)

	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("ticket", "t", ticket)
	for _, shown := range []string{fmt.Sprint(ticket), fmt.Sprintf("%+v", ticket), fmt.Sprintf("%#v", ticket), logged.String()} {
		assert.NotContains(t, shown, ticket.Token, "the token is a secret")
		assert.Contains(t, shown, "[REDACTED]")
	}

	_, err = e.c.OpenSessionInteractive(t.Context(), "")
	require.ErrorIs(t, err, sandbox.ErrInvalidInput)
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
	_, err = e.c.OpenSessionInteractive(t.Context(), sb.SessionID())
	require.ErrorIs(t, err, sandbox.ErrGone)
}
