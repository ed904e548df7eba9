package sandbox

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// NetworkPolicy is the network access of a sandbox, in the form sent to the
// API. Use AllowAll, DenyAll, or a custom policy with Allow, AllowRules and
// Subnets set (Mode empty).
type NetworkPolicy struct {
	// Mode is "allow-all" or "deny-all"; empty for a custom policy.
	Mode string
	// Allow lists domain patterns ("github.com", "*.example.org") that
	// may be reached. Ignored when AllowRules is set.
	Allow []string
	// AllowRules maps a domain pattern to rules applied to its traffic; an
	// empty list plainly allows the domain.
	AllowRules map[string][]NetworkRule
	// Subnets allows and denies address ranges; deny wins.
	Subnets *Subnets
}

// AllowAll is the policy that allows all traffic (the default).
func AllowAll() *NetworkPolicy { return &NetworkPolicy{Mode: "allow-all"} }

// DenyAll is the policy that blocks all traffic.
func DenyAll() *NetworkPolicy { return &NetworkPolicy{Mode: "deny-all"} }

// Subnets are CIDR ranges.
type Subnets struct {
	Allow []string
	Deny  []string
}

// NetworkRule applies to traffic to one domain: exactly one of Transform,
// ForwardURL and Response must be set.
type NetworkRule struct {
	Match      *Match
	Transform  []Transform
	ForwardURL string
	Response   *DirectResponse
}

// Transform adds headers to matching requests.
type Transform struct {
	Headers map[string]string
}

// DirectResponse answers matching requests without contacting the domain.
type DirectResponse struct {
	StatusCode  int
	Headers     map[string]string
	Body        string
	ContentType string
}

// Match selects requests. Every set field must match.
type Match struct {
	Path        *StringMatcher
	Method      []string
	QueryString []KeyValueMatch
	Headers     []KeyValueMatch
}

// KeyValueMatch matches a query parameter or header.
type KeyValueMatch struct {
	Key   *StringMatcher
	Value *StringMatcher
}

// StringMatcher matches a string: exactly one field must be set. Regex uses RE2
// syntax.
type StringMatcher struct {
	Exact      string
	StartsWith string
	Regex      string
}

// Validate reports the first problem in p.
func (p *NetworkPolicy) Validate() error {
	if p == nil {
		return nil
	}
	switch p.Mode {
	case "allow-all", "deny-all":
		if len(p.Allow) > 0 || len(p.AllowRules) > 0 || p.Subnets != nil {
			return apierr.Invalid("NetworkPolicy", "mode %q cannot be combined with Allow, AllowRules or Subnets", p.Mode)
		}
		return nil
	case "":
	default:
		return apierr.Invalid("NetworkPolicy.Mode", "must be \"allow-all\", \"deny-all\" or empty, got %q", p.Mode)
	}
	for i, d := range p.Allow {
		if reason := badDomain(d); reason != "" {
			return apierr.Invalid(fmt.Sprintf("NetworkPolicy.Allow[%d]", i), "%s", reason)
		}
	}
	for d, rules := range p.AllowRules {
		if reason := badDomain(d); reason != "" {
			return apierr.Invalid("NetworkPolicy.AllowRules", "%s", reason)
		}
		for i, r := range rules {
			if err := r.validate(fmt.Sprintf("NetworkPolicy.AllowRules[%q][%d]", d, i)); err != nil {
				return err
			}
		}
	}
	if p.Subnets != nil {
		for i, c := range append(append([]string{}, p.Subnets.Allow...), p.Subnets.Deny...) {
			if _, err := netip.ParsePrefix(c); err != nil {
				return apierr.Invalid(fmt.Sprintf("NetworkPolicy.Subnets[%d]", i), "%q is not a CIDR range", c)
			}
		}
	}
	return nil
}

func (r NetworkRule) validate(field string) error {
	n := 0
	if len(r.Transform) > 0 {
		n++
	}
	if r.ForwardURL != "" {
		n++
		if !strings.HasPrefix(r.ForwardURL, "https://") {
			return apierr.Invalid(field+".ForwardURL", "must be an https URL")
		}
	}
	if r.Response != nil {
		n++
		if r.Response.StatusCode < 200 || r.Response.StatusCode > 599 {
			return apierr.Invalid(field+".Response.StatusCode", "must be 200–599, got %d", r.Response.StatusCode)
		}
	}
	if n != 1 {
		return apierr.Invalid(field, "exactly one of Transform, ForwardURL and Response must be set")
	}
	if m := r.Match; m != nil {
		if err := m.Path.validate(field + ".Match.Path"); err != nil {
			return err
		}
		for i, kv := range append(append([]KeyValueMatch{}, m.QueryString...), m.Headers...) {
			if err := kv.Key.validate(fmt.Sprintf("%s.Match[%d].Key", field, i)); err != nil {
				return err
			}
			if err := kv.Value.validate(fmt.Sprintf("%s.Match[%d].Value", field, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *StringMatcher) validate(field string) error {
	if m == nil {
		return nil
	}
	n := 0
	for _, s := range []string{m.Exact, m.StartsWith, m.Regex} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return apierr.Invalid(field, "exactly one of Exact, StartsWith and Regex must be set")
	}
	if m.Regex != "" {
		if _, err := regexp.Compile(m.Regex); err != nil {
			return apierr.Invalid(field+".Regex", "%v", err)
		}
	}
	return nil
}

// MarshalJSON encodes the request form of the policy.
func (p NetworkPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(p.toWire())
}

func (p *NetworkPolicy) toWire() *wire.NetworkPolicy {
	if p == nil {
		return nil
	}
	if p.Mode != "" {
		return &wire.NetworkPolicy{Mode: p.Mode}
	}
	out := &wire.NetworkPolicy{}
	if len(p.AllowRules) > 0 {
		m := make(map[string][]wire.NetworkRule, len(p.AllowRules))
		for d, rules := range p.AllowRules {
			list := make([]wire.NetworkRule, 0, len(rules))
			for _, r := range rules {
				list = append(list, r.toWire())
			}
			m[d] = list
		}
		out.Allow = &wire.NetworkAllow{Rules: m}
	} else if len(p.Allow) > 0 {
		out.Allow = &wire.NetworkAllow{Domains: p.Allow}
	}
	if p.Subnets != nil {
		out.Subnets = &wire.Subnets{Allow: p.Subnets.Allow, Deny: p.Subnets.Deny}
	}
	return out
}

func (r NetworkRule) toWire() wire.NetworkRule {
	w := wire.NetworkRule{ForwardURL: r.ForwardURL}
	if r.Match != nil {
		w.Match = r.Match.toWire()
	}
	for _, t := range r.Transform {
		w.Transform = append(w.Transform, wire.Transform{Headers: t.Headers})
	}
	if d := r.Response; d != nil {
		w.Response = &wire.DirectResponse{StatusCode: d.StatusCode, Headers: d.Headers, Body: d.Body, ContentType: d.ContentType}
	}
	return w
}

func (m *Match) toWire() *wire.Match {
	kv := func(list []KeyValueMatch) []wire.KeyValueMatch {
		out := make([]wire.KeyValueMatch, 0, len(list))
		for _, x := range list {
			out = append(out, wire.KeyValueMatch{Key: x.Key.toWire(), Value: x.Value.toWire()})
		}
		return out
	}
	w := &wire.Match{Path: m.Path.toWire(), Method: m.Method}
	if len(m.QueryString) > 0 {
		w.QueryString = kv(m.QueryString)
	}
	if len(m.Headers) > 0 {
		w.Headers = kv(m.Headers)
	}
	return w
}

// toWire keeps one field, the first set of Exact, StartsWith and Regex.
func (m *StringMatcher) toWire() *wire.StringMatcher {
	switch {
	case m == nil:
		return nil
	case m.Exact != "":
		return &wire.StringMatcher{Exact: m.Exact}
	case m.StartsWith != "":
		return &wire.StringMatcher{StartsWith: m.StartsWith}
	default:
		return &wire.StringMatcher{Regex: m.Regex}
	}
}

// badDomain says why d cannot be a domain pattern, or "".
func badDomain(d string) string {
	switch {
	case strings.TrimSpace(d) == "":
		return "empty domain"
	case strings.ContainsFunc(d, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("domain %q contains white space or a control character", d)
	}
	return ""
}
