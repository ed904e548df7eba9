package sandbox_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/sandbox"
	"github.com/sbx-go/vercel-sandbox/sandbox/local"
	"github.com/sbx-go/vercel-sandbox/sandbox/sandboxtest"
)

// clearCredentialsEnv leaves VERCEL_TOKEN, VERCEL_TEAM_ID and
// VERCEL_PROJECT_ID as the only credentials of the environment.
func clearCredentialsEnv(t *testing.T) {
	for _, k := range []string{"VERCEL_OIDC_TOKEN", "VERCEL_OIDC_TOKEN_FILE", "VERCEL_ORG_ID", "VERCEL_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_DATA_HOME", t.TempDir())
}

// A program that makes its client with NewClient() alone reaches a local
// server named by the environment, credentials and base URL alike.
func TestEnvBaseURL(t *testing.T) {
	clearCredentialsEnv(t)
	srv := sandboxtest.NewServer(t, local.WithToken("tok_env"))
	t.Setenv(sandbox.EnvBaseURL, srv.URL())
	t.Setenv("VERCEL_TOKEN", "tok_env")
	t.Setenv("VERCEL_TEAM_ID", local.TeamID)
	t.Setenv("VERCEL_PROJECT_ID", local.ProjectID)

	c, err := sandbox.NewClient()
	require.NoError(t, err)
	sb, err := c.Create(t.Context(), sandbox.CreateParams{Name: "from-env"})
	require.NoError(t, err)
	_, err = sb.Stop(t.Context())
	require.NoError(t, err)
	assert.Len(t, srv.RequestsTo("POST", "/v3/sandboxes"), 1)

	// WithBaseURL wins over the environment.
	other := sandboxtest.NewServer(t, local.WithToken("tok_env"))
	c, err = sandbox.NewClient(sandbox.WithBaseURL(other.URL()))
	require.NoError(t, err)
	_, err = c.Get(t.Context(), "from-env")
	assert.ErrorIs(t, err, sandbox.ErrNotFound, "the other server has no such sandbox")
	assert.Len(t, other.Requests(), 1)

	// Empty is unset.
	t.Setenv(sandbox.EnvBaseURL, "")
	_, err = sandbox.NewClient(sandbox.WithTransport(sandbox.RoundTripFunc(nil)))
	require.NoError(t, err, "the default base URL needs no *http.Transport")
}

// A base URL from the environment obeys the rule of WithBaseURL, its
// errors name the variable, and a secret in it never shows in them.
func TestEnvBaseURLRefused(t *testing.T) {
	clearCredentialsEnv(t)
	const secret = "tok_env_secret_5ac1"
	for _, u := range []string{
		"http://api.vercel.com",
		"http://10.0.0.1:8080/api",
		"http://api.localhost:3000",
		"http://user:" + secret + "@203.0.113.7/api",
		"http://user:" + secret + "@127.0.0.1:1/api",
		"https://user:" + secret + "@api.example.com",
		"https://api.example.com/api?token=" + secret,
		"http://user:" + secret + "@[::1/api",
		"ftp://127.0.0.1/",
		"127.0.0.1:4000",
	} {
		t.Setenv(sandbox.EnvBaseURL, u)
		_, err := sandbox.NewClient(sandbox.WithToken(secret), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		var ie *sandbox.InputError
		var insecure *sandbox.InsecureURLError
		switch {
		case errors.As(err, &ie):
			assert.Equal(t, sandbox.EnvBaseURL, ie.Field, u)
		case errors.As(err, &insecure):
			assert.Equal(t, sandbox.EnvBaseURL, insecure.Field, u)
		default:
			t.Errorf("%s: got %v, want an *InputError or an *InsecureURLError", u, err)
		}
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput, u)
		assert.NotContains(t, fmt.Sprintf("%v|%+v|%#v", err, err, err), secret, u)

		// The same URL given in code.
		_, err = sandbox.NewClient(sandbox.WithBaseURL(u), sandbox.WithToken(secret), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		assert.ErrorIs(t, err, sandbox.ErrInvalidInput, u)
		assert.NotContains(t, fmt.Sprintf("%v|%+v|%#v", err, err, err), secret, u)
	}
	t.Setenv(sandbox.EnvBaseURL, "http://api.vercel.com")
	_, err := sandbox.NewClient(sandbox.WithToken(secret), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
	assert.ErrorIs(t, err, sandbox.ErrInsecureURL)

	for _, u := range []string{"http://127.0.0.1:1", "http://localhost:3000/api", "http://[::1]:8080", "https://api.example.com"} {
		t.Setenv(sandbox.EnvBaseURL, u)
		_, err := sandbox.NewClient(sandbox.WithToken("tok"), sandbox.WithTeam("team"), sandbox.WithProject("prj"))
		assert.NoError(t, err, u)
	}
}
