package local_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sbx-go/vercel-sandbox/auth/authtest"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
)

// The hosted differences the client-level tests do not reach.

func TestHostedEnvPayloadLimit(t *testing.T) {
	t.Parallel()
	h := newHostedHarness(t)
	r := h.create(nil)
	big := map[string]string{"BIG": strings.Repeat("x", 5000)}
	e := h.fail(400, "bad_request", "POST", sessPath(r.Session.ID, "/cmd"),
		map[string]any{"command": "echo", "args": []string{}, "env": big})
	assert.Equal(t, "env payload too large", e.Message)
	h.fail(400, "bad_request", "POST", "/v2/sandboxes", map[string]any{"projectId": local.ProjectID, "runtime": "node22", "env": big})
	assert.Zero(t, h.srv.CommandCount())
}

func TestHostedExpiredTokenIs403InvalidToken(t *testing.T) {
	t.Parallel()
	expired := "Bearer " + authtest.MakeJWT(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
	h := newHostedHarness(t)
	e := h.fail(403, "forbidden", "GET", "/v2/sandboxes?projectId="+local.ProjectID, nil, "Authorization", expired)
	assert.Equal(t, "Not authorized", e.Message)

	f := newHarness(t)
	f.fail(401, "unauthorized", "GET", "/v2/sandboxes?projectId="+local.ProjectID, nil, "Authorization", expired)
}
