package auth

import (
	"context"
	"fmt"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// Static returns a provider of the fixed credentials c (c.Token, c.TeamID
// and c.ProjectID; c.Expiry and c.Source are ignored), for CI and hosts
// outside Vercel. Nothing is read from the environment and the token is
// not parsed.
//
// Token, TeamID and ProjectID are required. When one or two are missing,
// Credentials returns a *MissingParamsError naming them in the order token,
// teamId, projectId, with the message of the TypeScript SDK. Unlike the
// TypeScript SDK, an empty string counts as missing.
func Static(c Credentials) Provider {
	return staticProvider{token: c.Token, teamID: c.TeamID, projectID: c.ProjectID}
}

type staticProvider struct {
	token, teamID, projectID string
}

func (s staticProvider) Credentials(context.Context) (Credentials, error) {
	return staticCredentials(s.token, s.teamID, s.projectID)
}

// String describes the provider without its token.
func (s staticProvider) String() string {
	return fmt.Sprintf("auth.Static(token=%s, teamID=%q, projectID=%q)", redact.Value(s.token), s.teamID, s.projectID)
}

// GoString is String, so %#v does not print the token either.
func (s staticProvider) GoString() string { return s.String() }

func staticCredentials(token, teamID, projectID string) (Credentials, error) {
	if missing := unset("token", token, "teamId", teamID, "projectId", projectID); len(missing) > 0 {
		return Credentials{}, &MissingParamsError{Missing: missing}
	}
	return Credentials{Token: token, TeamID: teamID, ProjectID: projectID, Source: SourceExplicit}, nil
}

// unset returns the names, in order, of the name-value pairs whose value
// is empty.
func unset(pairs ...string) []string {
	var names []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			names = append(names, pairs[i])
		}
	}
	return names
}
