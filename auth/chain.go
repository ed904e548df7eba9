package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
)

// Chain returns a provider that asks providers in order and returns the
// first credentials it gets. A provider that returns an error matching
// ErrNotApplicable is skipped; any other error ends the search and is
// returned, so a misconfigured source is reported rather than silently
// replaced by the next one. When no provider applies, the error matches
// ErrNotApplicable and lists their reasons.
//
// The chain implements Invalidator by telling every provider that does.
// A nil provider makes every call fail with an *InputError naming it.
func Chain(providers ...Provider) Provider {
	return chain(append([]Provider(nil), providers...))
}

type chain []Provider

func (c chain) Credentials(ctx context.Context) (Credentials, error) {
	for i, p := range c {
		if p == nil {
			return Credentials{}, apierr.Invalid(fmt.Sprintf("providers[%d]", i), "nil provider")
		}
	}
	var reasons []error
	for _, p := range c {
		creds, err := p.Credentials(ctx)
		switch {
		case err == nil:
			return creds, nil
		case errors.Is(err, ErrNotApplicable):
			if err != ErrNotApplicable {
				reasons = append(reasons, err)
			}
		default:
			return Credentials{}, err
		}
	}
	return Credentials{}, &noProviderError{reasons: reasons}
}

// Invalidate forwards staleToken to every provider that is an Invalidator.
func (c chain) Invalidate(staleToken string) {
	for _, p := range c {
		if inv, ok := p.(Invalidator); ok {
			inv.Invalidate(staleToken)
		}
	}
}

// noProviderError is returned by a chain where no provider applies.
type noProviderError struct {
	reasons []error
}

func (e *noProviderError) Error() string {
	if len(e.reasons) == 0 {
		return "no credentials found"
	}
	msgs := make([]string, len(e.reasons))
	for i, r := range e.reasons {
		msgs[i] = r.Error()
	}
	return "no credentials found: " + strings.Join(msgs, "; ")
}

func (e *noProviderError) Unwrap() []error {
	return append([]error{ErrNotApplicable}, e.reasons...)
}

// skipError marks a provider as not applicable for the reason cause.
type skipError struct{ cause error }

func (e *skipError) Error() string   { return e.cause.Error() }
func (e *skipError) Unwrap() []error { return []error{ErrNotApplicable, e.cause} }

func notApplicable(cause error) error { return &skipError{cause: cause} }
