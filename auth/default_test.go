package auth

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sbx-go/vercel-sandbox/auth/internal/host"
)

const (
	tsLocalMessage = "Could not get credentials from OIDC context.\n" +
		"Please link your Vercel project using `npx vercel link`.\n" +
		"Then, pull an initial OIDC token with `npx vercel env pull`\n" +
		"and retry.\n" +
		"╰▶ Make sure you are loading `.env.local` correctly, or passing $VERCEL_OIDC_TOKEN directly."
	tsVercelMessage = "Could not get credentials from OIDC context.\n" +
		"Please make sure OIDC is set up for your project\n" +
		"╰▶ Docs: https://vercel.com/docs/oidc"
)

// Test 1.
func TestDefault_ExplicitWinsOverEverything(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	file := filepath.Join(f.root, "oidc-token")
	f.write(file, tok("team_file", "prj_file", t0.Add(time.Hour)))
	f.env.Set(EnvOIDCTokenFile, file)
	f.env.Set(EnvOIDCToken, tok("team_env", "prj_env", t0.Add(time.Hour)))
	f.env.Set("VERCEL_TOKEN", "pat")
	f.env.Set("VERCEL_TEAM_ID", "team_pat")
	f.env.Set("VERCEL_PROJECT_ID", "prj_pat")
	f.link("prj_link", "team_link")

	p := f.defaults(DefaultOptions{Token: "tok", TeamID: "team_x", ProjectID: "prj_x"})
	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	want := Credentials{Token: "tok", TeamID: "team_x", ProjectID: "prj_x", Source: SourceExplicit}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
	assert.Zero(t, f.srv.Hits())
	assert.Zero(t, f.env.Reads(EnvOIDCToken))
	assert.Zero(t, f.env.Reads(EnvOIDCTokenFile))
}

// Test 2.
func TestDefault_ExplicitPartialFailsWithoutFallThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		token, team, project string
		want                 []string
	}{
		{"tok", "", "", []string{"teamId", "projectId"}},
		{"", "team", "", []string{"token", "projectId"}},
		{"", "", "prj", []string{"token", "teamId"}},
		{"tok", "team", "", []string{"projectId"}},
		{"tok", "", "prj", []string{"teamId"}},
		{"", "team", "prj", []string{"token"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.want, "+"), func(t *testing.T) {
			t.Parallel()
			env := newTestEnv(EnvOIDCToken, tok("team_env", "prj_env", t0.Add(time.Hour)))
			p := Default(DefaultOptions{
				Token: tt.token, TeamID: tt.team, ProjectID: tt.project,
				sys: host.System{LookupEnv: env.Lookup},
			})
			_, err := p.Credentials(context.Background())
			require.Error(t, err)
			assert.Equal(t, "Missing credentials parameters to access the Vercel API: "+strings.Join(tt.want, ", "), err.Error())
			assert.ErrorIs(t, err, ErrMissingParams)
			var mp *MissingParamsError
			require.ErrorAs(t, err, &mp)
			assert.Equal(t, tt.want, mp.Missing)
			assert.Zero(t, env.Reads(EnvOIDCToken), "the chain must stop at explicit params")

			// Static gives the same answer.
			_, err = Static(Credentials{Token: tt.token, TeamID: tt.team, ProjectID: tt.project}).Credentials(context.Background())
			require.Error(t, err)
			assert.Equal(t, mp.Error(), err.Error())
		})
	}
}

// Test 3.
func TestExplicitEmptyStringIsMissing(t *testing.T) {
	t.Parallel()
	_, err := Static(Credentials{Token: "", TeamID: "team", ProjectID: "prj"}).Credentials(context.Background())
	assert.EqualError(t, err, "Missing credentials parameters to access the Vercel API: token")
	_, err = Static(Credentials{Token: "tok", TeamID: "", ProjectID: "prj"}).Credentials(context.Background())
	assert.EqualError(t, err, "Missing credentials parameters to access the Vercel API: teamId")
	_, err = Static(Credentials{Token: "", TeamID: "", ProjectID: ""}).Credentials(context.Background())
	assert.EqualError(t, err, "Missing credentials parameters to access the Vercel API: token, teamId, projectId")

	// The deviation from the TypeScript SDK is documented on both Static and Default.
	docs := funcDocs(t, "static.go", "default.go")
	assert.Contains(t, docs["Static"], "an empty string counts as missing")
	assert.Contains(t, docs["Default"], "an empty string counts as missing")
}

// funcDocs returns the doc comments of the top-level functions in files.
func funcDocs(t *testing.T, files ...string) map[string]string {
	t.Helper()
	docs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		file, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Doc != nil {
				docs[fn.Name.Name] = strings.Join(strings.Fields(fn.Doc.Text()), " ")
			}
		}
	}
	return docs
}

// Test 4.
func TestDefault_OIDCPrecedence(t *testing.T) {
	t.Parallel()
	exp := t0.Add(time.Hour)
	ctxTok, fileTok, envTok := tok("team_ctx", "prj_ctx", exp), tok("team_file", "prj_file", exp), tok("team_env", "prj_env", exp)

	setup := func(t *testing.T, withFile bool) (*fixture, Provider) {
		f := newFixture(t)
		f.env.Set(EnvOIDCToken, envTok)
		if withFile {
			file := filepath.Join(f.root, "oidc-token")
			f.write(file, fileTok+"\n")
			f.env.Set(EnvOIDCTokenFile, file)
		}
		return f, f.defaults(DefaultOptions{})
	}
	t.Run("context beats file and env", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, true)
		c, err := p.Credentials(WithOIDCToken(context.Background(), ctxTok))
		require.NoError(t, err)
		assert.Equal(t, ctxTok, c.Token)
		assert.Equal(t, "team_ctx", c.TeamID)
		assert.Equal(t, SourceOIDCContext, c.Source)
	})
	t.Run("file beats env", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, true)
		c, err := p.Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, fileTok, c.Token)
		assert.Equal(t, "team_file", c.TeamID)
		assert.Equal(t, SourceOIDCFile, c.Source)
	})
	t.Run("env without file", func(t *testing.T) {
		t.Parallel()
		f, p := setup(t, false)
		c, err := p.Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, envTok, c.Token)
		assert.Equal(t, SourceOIDCEnv, c.Source)
		assert.Zero(t, f.srv.Hits())
	})
}

// Test 5.
func TestDefault_FileRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	file := filepath.Join(f.root, "oidc-token")
	a, b := tok("team_a", "prj_a", t0.Add(time.Hour)), tok("team_b", "prj_b", t0.Add(2*time.Hour))
	f.env.Set(EnvOIDCTokenFile, file)
	p := f.defaults(DefaultOptions{})

	f.write(file, a)
	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, a, c.Token)
	assert.Equal(t, "team_a", c.TeamID)

	f.write(file, b)
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, b, c.Token)
	assert.Equal(t, "team_b", c.TeamID)
	assert.Zero(t, f.srv.Hits())
}

// Test 6.
func TestDefault_FileEmptyOrMissing(t *testing.T) {
	t.Parallel()
	envTok := tok("team_env", "prj_env", t0.Add(time.Hour))
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		file := filepath.Join(f.root, "oidc-token")
		f.write(file, " \n")
		f.env.Set(EnvOIDCTokenFile, file)
		f.env.Set(EnvOIDCToken, envTok)
		_, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "The Vercel OIDC token file is empty: "+file)
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
	})
	t.Run("missing, no fallback to env", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		file := filepath.Join(f.root, "does-not-exist")
		f.env.Set(EnvOIDCTokenFile, file)
		f.env.Set(EnvOIDCToken, envTok)
		c, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		require.Error(t, err)
		assert.Zero(t, c)
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
		assert.Contains(t, err.Error(), file)
		assert.NotContains(t, err.Error(), envTok)
	})
}

// Test 7.
func TestDefault_EnvJWTClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exp := t0.Add(12 * time.Hour)
	jwt := tok("team_123", "prj_456", exp)
	f.env.Set(EnvOIDCToken, jwt)
	c, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
	require.NoError(t, err)
	want := Credentials{Token: jwt, TeamID: "team_123", ProjectID: "prj_456", Expiry: exp, Source: SourceOIDCEnv}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("credentials (-want +got):\n%s", diff)
	}
}

// Test 8.
func TestDefault_InvalidEnvJWT(t *testing.T) {
	t.Parallel()
	exp := t0.Add(time.Hour).Unix()
	tests := map[string]string{
		"missing project_id": mkJWT(map[string]any{"owner_id": "team", "exp": exp}),
		"missing owner_id":   mkJWT(map[string]any{"project_id": "prj", "exp": exp}),
		"two segments":       "eyJhbGciOiJSUzI1NiJ9.eyJvd25lcl9pZCI6InRlYW0ifQ",
		"bad base64":         "eyJhbGciOiJSUzI1NiJ9.%%%not-base64%%%.c2ln",
		"bad json":           "eyJhbGciOiJSUzI1NiJ9." + b64("{not json") + ".c2ln",
	}
	for name, jwt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.env.Set(EnvOIDCToken, jwt)
			_, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidOIDCToken)
			assert.ErrorIs(t, err, ErrLocalOIDCContext)
			assert.Contains(t, err.Error(), "Invalid Vercel OIDC token: ")
			assert.NotContains(t, err.Error(), jwt)
			assert.Zero(t, f.srv.Hits())
		})
	}
}

// Test 9.
func TestDefault_NothingConfigured(t *testing.T) {
	t.Parallel()
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
		assert.NotErrorIs(t, err, ErrVercelOIDCContext)
		assert.True(t, strings.HasPrefix(err.Error(), tsLocalMessage), err.Error())
		cause := errors.Unwrap(err)
		require.Error(t, cause)
		assert.Contains(t, cause.Error(), "no Vercel OIDC token")
		assert.Contains(t, cause.Error(), "unable to find project root directory")
		assert.ErrorIs(t, err, errNotLinked)
	})
	t.Run("on vercel", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.env.Set("VERCEL_URL", "my-app.vercel.app")
		_, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrVercelOIDCContext)
		assert.NotErrorIs(t, err, ErrLocalOIDCContext)
		assert.True(t, strings.HasPrefix(err.Error(), tsVercelMessage), err.Error())
		require.Error(t, errors.Unwrap(err))
	})
}

// Test 10.
func TestDefault_EnvAccessToken(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, opts DefaultOptions, kv ...string) (Credentials, error) {
		f := newFixture(t)
		for i := 0; i+1 < len(kv); i += 2 {
			f.env.Set(kv[i], kv[i+1])
		}
		return f.defaults(opts).Credentials(context.Background())
	}
	t.Run("trio", func(t *testing.T) {
		t.Parallel()
		c, err := run(t, DefaultOptions{}, "VERCEL_TOKEN", "pat", "VERCEL_TEAM_ID", "team", "VERCEL_PROJECT_ID", "prj")
		require.NoError(t, err)
		assert.Equal(t, Credentials{Token: "pat", TeamID: "team", ProjectID: "prj", Source: SourceAccessTokenEnv}, c)
	})
	t.Run("org id alias", func(t *testing.T) {
		t.Parallel()
		c, err := run(t, DefaultOptions{}, "VERCEL_TOKEN", "pat", "VERCEL_ORG_ID", "team_org", "VERCEL_PROJECT_ID", "prj")
		require.NoError(t, err)
		assert.Equal(t, "team_org", c.TeamID)
	})
	t.Run("token without team and project", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, DefaultOptions{}, "VERCEL_TOKEN", "pat")
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrMissingParams)
		var me *MissingEnvError
		require.ErrorAs(t, err, &me)
		assert.Equal(t, []string{"VERCEL_TEAM_ID", "VERCEL_PROJECT_ID"}, me.Missing)
		assert.Contains(t, err.Error(), "VERCEL_TEAM_ID, VERCEL_PROJECT_ID")
		assert.NotContains(t, err.Error(), "pat")
	})
	t.Run("project id alone is ignored", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, DefaultOptions{}, "VERCEL_PROJECT_ID", "prj")
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
	})
	t.Run("oidc env wins", func(t *testing.T) {
		t.Parallel()
		c, err := run(t, DefaultOptions{}, EnvOIDCToken, tok("team_oidc", "prj_oidc", t0.Add(time.Hour)),
			"VERCEL_TOKEN", "pat", "VERCEL_TEAM_ID", "team", "VERCEL_PROJECT_ID", "prj")
		require.NoError(t, err)
		assert.Equal(t, SourceOIDCEnv, c.Source)
		assert.Equal(t, "team_oidc", c.TeamID)
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		_, err := run(t, DefaultOptions{DisableEnvAccessToken: true},
			"VERCEL_TOKEN", "pat", "VERCEL_TEAM_ID", "team", "VERCEL_PROJECT_ID", "prj")
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
	})
}

// Test 12.
func TestDefault_ExplicitJWTNotSwappedForAmbient(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	explicit := tok("team_A", "prj_A", t0.Add(time.Hour))
	f.env.Set(EnvOIDCToken, tok("team_B", "prj_B", t0.Add(time.Hour)))
	p := f.defaults(DefaultOptions{Token: explicit, TeamID: "team_A", ProjectID: "prj_A"})
	for range 3 {
		c, err := p.Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, explicit, c.Token)
		assert.Equal(t, "team_A", c.TeamID)
		assert.Equal(t, "prj_A", c.ProjectID)
	}
}

func TestDefault_ContextCancellationIsNotWrapped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.env.Set(EnvOIDCToken, tok("team", "prj", t0.Add(-time.Minute)))
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.srv.Respond(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := f.defaults(DefaultOptions{}).Credentials(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ErrLocalOIDCContext)
}

func TestDefault_InvalidateForwardsToOIDC(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	old := tok("team", "prj", t0.Add(time.Hour))
	fresh := tok("team", "prj", t0.Add(2*time.Hour))
	f.env.Set(EnvOIDCToken, old)
	f.srv.Respond(tokenResponse(fresh))
	p := f.defaults(DefaultOptions{})
	inv, ok := p.(Invalidator)
	require.True(t, ok, "Default must implement Invalidator")

	c, err := p.Credentials(context.Background())
	require.NoError(t, err)
	require.Equal(t, old, c.Token)
	inv.Invalidate(old)
	c, err = p.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, fresh, c.Token)
	assert.EqualValues(t, 1, f.srv.Hits())
}

func TestDefault_NoIOAtConstruction(t *testing.T) {
	t.Parallel()
	env := newTestEnv()
	calls := 0
	sys := host.System{
		LookupEnv: env.Lookup,
		Getwd:     func() (string, error) { calls++; return "/", nil },
		FS:        panicFS{},
	}
	_ = Default(DefaultOptions{sys: sys, Refresher: newFixture(t).refresher()})
	assert.Zero(t, calls)
	assert.Empty(t, env.reads)
}

// panicFS fails the test if any file operation happens.
type panicFS struct{ host.OSFS }

func (panicFS) ReadFile(string) ([]byte, error) { panic("unexpected ReadFile") }

func (panicFS) Stat(string) (fs.FileInfo, error) { panic("unexpected Stat") }

// Test 11, as far as Default goes: the last tier mints through the
// Refresher for the linked project; the refresher's own rules are tested
// in package vercelcli.
func TestDefault_LinkedProjectTier(t *testing.T) {
	t.Parallel()
	minted := tok("team", "prj", t0.Add(12*time.Hour))
	t.Run("linked", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link("prj", "team")
		f.srv.Respond(tokenResponse(minted))
		c, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, Credentials{Token: minted, TeamID: "team", ProjectID: "prj", Expiry: t0.Add(12 * time.Hour), Source: SourceLinkedProject}, c)
		assert.Equal(t, mintRequest{Method: "POST", Path: "/v1/projects/prj/token", RawQuery: "source=vercel-oidc-refresh&teamId=team", Authorization: "Bearer cli_token"}, f.lastRequest())
		assert.EqualValues(t, 1, f.srv.Hits())
	})
	t.Run("not linked", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.defaults(DefaultOptions{}).Credentials(context.Background())
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
		assert.ErrorIs(t, err, errNotLinked)
		assert.Zero(t, f.srv.Hits())
	})
	t.Run("a refresher that is not a LinkedRefresher is always asked", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		asked := 0
		ref := RefresherFunc(func(_ context.Context, target Target) (string, error) {
			project, team := target.ProjectID, target.TeamID
			asked++
			assert.Empty(t, project+team, "no claims to go by")
			return minted, nil
		})
		c, err := f.defaults(DefaultOptions{Refresher: ref}).Credentials(context.Background())
		require.NoError(t, err)
		assert.Equal(t, minted, c.Token)
		assert.Equal(t, 1, asked)
	})
	t.Run("no refresher", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		f.link("prj", "team")
		p := Default(DefaultOptions{sys: f.system()})
		_, err := p.Credentials(context.Background())
		assert.ErrorIs(t, err, ErrLocalOIDCContext)
		assert.Zero(t, f.srv.Hits())
	})
}
