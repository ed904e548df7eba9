package auth

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCredentialsNeverPrintToken(t *testing.T) {
	t.Parallel()
	const secret = "super-secret-token-value"
	c := Credentials{Token: secret, TeamID: "team_1", ProjectID: "prj_1", Expiry: time.Unix(1700000000, 0), Source: SourceOIDCEnv}

	outputs := map[string]string{
		"String": c.String(),
		"%v":     fmt.Sprintf("%v", c),
		"%+v":    fmt.Sprintf("%+v", c),
		"%#v":    fmt.Sprintf("%#v", c),
		"ptr %v": fmt.Sprintf("%v", &c),
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("creds", "credentials", c)
	outputs["slog json"] = buf.String()
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("creds", "credentials", c)
	outputs["slog text"] = buf.String()

	for name, out := range outputs {
		assert.NotContains(t, out, secret, name)
		assert.Contains(t, out, "[REDACTED]", name)
		assert.Contains(t, out, "team_1", name)
	}
	assert.Equal(t, `auth.Credentials{Token:[REDACTED] TeamID:"team_1" ProjectID:"prj_1" Source:oidc-env Expiry:2023-11-14T22:13:20Z}`, c.String())
	assert.Equal(t, `auth.Credentials{Token: TeamID:"" ProjectID:"" Source:}`, Credentials{}.String())
}

func TestProvidersNeverPrintToken(t *testing.T) {
	t.Parallel()
	const secret = "super-secret-token-value"
	for _, p := range []Provider{
		Static(Credentials{Token: secret, TeamID: "team", ProjectID: "prj"}),
		Default(DefaultOptions{Token: secret, TeamID: "team", ProjectID: "prj"}),
	} {
		for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
			assert.NotContains(t, fmt.Sprintf(format, p), secret)
		}
	}
}

func TestStatic(t *testing.T) {
	t.Parallel()
	c, err := Static(Credentials{Token: "tok", TeamID: "team", ProjectID: "prj"}).Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Credentials{Token: "tok", TeamID: "team", ProjectID: "prj", Source: SourceExplicit}, c)
}
