package auth

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/sbx-go/vercel-sandbox/internal/redact"
)

// String formats c for people; the token is replaced by [REDACTED].
func (c Credentials) String() string {
	s := fmt.Sprintf("auth.Credentials{Token:%s TeamID:%q ProjectID:%q Source:%s",
		redact.Value(c.Token), c.TeamID, c.ProjectID, c.Source)
	if !c.Expiry.IsZero() {
		s += " Expiry:" + c.Expiry.UTC().Format(time.RFC3339)
	}
	return s + "}"
}

// GoString formats c for %#v; the token is replaced by [REDACTED].
func (c Credentials) GoString() string {
	return fmt.Sprintf("auth.Credentials{Token:%q, TeamID:%q, ProjectID:%q, Expiry:%#v, Source:%q}",
		redact.Value(c.Token), c.TeamID, c.ProjectID, c.Expiry, c.Source)
}

// LogValue implements slog.LogValuer; the token is replaced by [REDACTED].
func (c Credentials) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("token", redact.Value(c.Token)),
		slog.String("team_id", c.TeamID),
		slog.String("project_id", c.ProjectID),
		slog.String("source", string(c.Source)),
	}
	if !c.Expiry.IsZero() {
		attrs = append(attrs, slog.Time("expiry", c.Expiry))
	}
	return slog.GroupValue(attrs...)
}
