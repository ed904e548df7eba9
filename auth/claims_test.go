package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseClaims(t *testing.T) {
	t.Parallel()
	full := `{"owner_id":"team_1","project_id":"prj_1","owner":"acme","project":"web","environment":"preview","exp":1700000000.5,"iat":1699956800,"nbf":1,"sub":"x"}`
	header := b64(`{"alg":"RS256"}`)
	std := base64.StdEncoding.EncodeToString([]byte(full))
	tests := []struct {
		name  string
		token string
		want  Claims
		err   string
	}{
		{name: "all claims, fractional exp", token: header + "." + b64(full) + ".sig", want: Claims{
			OwnerID: "team_1", ProjectID: "prj_1", Owner: "acme", Project: "web", Environment: "preview",
			Expiry: time.Unix(1700000000, 5e8), IssuedAt: time.Unix(1699956800, 0),
		}},
		{name: "standard alphabet with padding", token: header + "." + std + ".sig", want: Claims{
			OwnerID: "team_1", ProjectID: "prj_1", Owner: "acme", Project: "web", Environment: "preview",
			Expiry: time.Unix(1700000000, 5e8), IssuedAt: time.Unix(1699956800, 0),
		}},
		{name: "url alphabet with padding", token: header + "." + base64.URLEncoding.EncodeToString([]byte(`{"owner_id":"t","project_id":"p"}`)) + ".",
			want: Claims{OwnerID: "t", ProjectID: "p"}},
		{name: "null exp never expires", token: header + "." + b64(`{"owner_id":"t","project_id":"p","exp":null}`) + ".s",
			want: Claims{OwnerID: "t", ProjectID: "p"}},
		{name: "non-string slugs are ignored", token: header + "." + b64(`{"owner_id":"t","project_id":"p","owner":1}`) + ".s",
			want: Claims{OwnerID: "t", ProjectID: "p"}},
		{name: "empty", token: "", err: "expected 3 dot-separated segments"},
		{name: "four segments", token: "a.b.c.d", err: "expected 3 dot-separated segments"},
		{name: "bad base64", token: "a.@@@.c", err: "payload is not base64url"},
		{name: "not an object", token: "a." + b64(`[1,2]`) + ".c", err: "payload is not a JSON object"},
		{name: "null payload", token: "a." + b64(`null`) + ".c", err: "payload is not a JSON object"},
		{name: "owner_id not a string", token: "a." + b64(`{"owner_id":5,"project_id":"p"}`) + ".c", err: "missing string claim owner_id"},
		{name: "empty project_id", token: "a." + b64(`{"owner_id":"t","project_id":""}`) + ".c", err: "missing string claim project_id"},
		{name: "exp a string", token: "a." + b64(`{"owner_id":"t","project_id":"p","exp":"soon"}`) + ".c", err: "claim exp is not a number"},
		{name: "iat a string", token: "a." + b64(`{"owner_id":"t","project_id":"p","iat":"x"}`) + ".c", err: "claim iat is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseClaims(tt.token)
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrInvalidOIDCToken)
				assert.Equal(t, "Invalid Vercel OIDC token: "+tt.err, err.Error())
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.Expiry.Equal(got.Expiry), "expiry %v, want %v", got.Expiry, tt.want.Expiry)
			assert.True(t, tt.want.IssuedAt.Equal(got.IssuedAt))
			tt.want.Expiry, tt.want.IssuedAt, got.Expiry, got.IssuedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseClaims_HugeExp(t *testing.T) {
	t.Parallel()
	c, err := ParseClaims("a." + b64(`{"owner_id":"t","project_id":"p","exp":1e300}`) + ".c")
	require.NoError(t, err)
	assert.True(t, c.Expiry.After(time.Now().AddDate(1000, 0, 0)))
}

func FuzzParseClaims(f *testing.F) {
	f.Add(tok("team", "prj", t0))
	f.Add(tok("team", "prj", time.Time{}))
	f.Add("a." + b64(`{"owner_id":"t","project_id":"p","exp":1.5}`) + ".c")
	f.Add("a." + base64.StdEncoding.EncodeToString([]byte(`{"owner_id":"t","project_id":"p"}`)) + ".c")
	f.Add("a.b")
	f.Add("..")
	f.Add("a.=.c")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ParseClaims(token)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Invalid Vercel OIDC token: ") {
				t.Fatalf("unexpected message %q", err)
			}
			if !errors.Is(err, ErrInvalidOIDCToken) {
				t.Fatalf("error does not match ErrInvalidOIDCToken: %v", err)
			}
			// The message is one of a few fixed texts: it cannot echo a
			// well-formed token.
			if strings.Count(token, ".") == 2 && len(token) > 40 && strings.Contains(err.Error(), token) {
				t.Fatalf("error contains the token")
			}
			return
		}
		if c.OwnerID == "" || c.ProjectID == "" {
			t.Fatalf("accepted claims without owner_id or project_id: %+v", c)
		}
		if strings.Count(token, ".") != 2 {
			t.Fatalf("accepted %d segments", strings.Count(token, ".")+1)
		}
	})
}
