package sandbox

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/sbx-go/vercel-sandbox/internal/apierr"
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
	AllowRules map[string][]Rule
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

// Rule applies to traffic to one domain: exactly one of Transform,
// ForwardURL and Response must be set.
type Rule struct {
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
	Path        *Matcher
	Method      []string
	QueryString []KeyValueMatch
	Headers     []KeyValueMatch
}

// KeyValueMatch matches a query parameter or header.
type KeyValueMatch struct {
	Key   *Matcher
	Value *Matcher
}

// Matcher matches a string: exactly one field must be set. Regex uses RE2
// syntax.
type Matcher struct {
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
		if strings.TrimSpace(d) == "" {
			return apierr.Invalid(fmt.Sprintf("NetworkPolicy.Allow[%d]", i), "empty domain")
		}
	}
	for d, rules := range p.AllowRules {
		if strings.TrimSpace(d) == "" {
			return apierr.Invalid("NetworkPolicy.AllowRules", "empty domain")
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

func (r Rule) validate(field string) error {
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

func (m *Matcher) validate(field string) error {
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
	if p.Mode != "" {
		return json.Marshal(map[string]string{"mode": p.Mode})
	}
	out := map[string]any{}
	if len(p.AllowRules) > 0 {
		m := make(map[string][]map[string]any, len(p.AllowRules))
		for d, rules := range p.AllowRules {
			list := make([]map[string]any, 0, len(rules))
			for _, r := range rules {
				list = append(list, r.wire())
			}
			m[d] = list
		}
		out["allow"] = m
	} else if len(p.Allow) > 0 {
		out["allow"] = p.Allow
	}
	if p.Subnets != nil {
		s := map[string][]string{}
		if len(p.Subnets.Allow) > 0 {
			s["allow"] = p.Subnets.Allow
		}
		if len(p.Subnets.Deny) > 0 {
			s["deny"] = p.Subnets.Deny
		}
		out["subnets"] = s
	}
	return json.Marshal(out)
}

func (r Rule) wire() map[string]any {
	o := map[string]any{}
	if r.Match != nil {
		o["match"] = r.Match.wire()
	}
	if len(r.Transform) > 0 {
		ts := make([]map[string]any, 0, len(r.Transform))
		for _, t := range r.Transform {
			ts = append(ts, map[string]any{"headers": t.Headers})
		}
		o["transform"] = ts
	}
	if r.ForwardURL != "" {
		o["forwardURL"] = r.ForwardURL
	}
	if d := r.Response; d != nil {
		resp := map[string]any{"statusCode": d.StatusCode}
		if len(d.Headers) > 0 {
			resp["headers"] = d.Headers
		}
		if d.Body != "" {
			resp["body"] = d.Body
		}
		if d.ContentType != "" {
			resp["contentType"] = d.ContentType
		}
		o["response"] = resp
	}
	return o
}

func (m *Match) wire() map[string]any {
	o := map[string]any{}
	if m.Path != nil {
		o["path"] = m.Path.wire()
	}
	if len(m.Method) > 0 {
		o["method"] = m.Method
	}
	kv := func(list []KeyValueMatch) []map[string]any {
		out := make([]map[string]any, 0, len(list))
		for _, x := range list {
			e := map[string]any{}
			if x.Key != nil {
				e["key"] = x.Key.wire()
			}
			if x.Value != nil {
				e["value"] = x.Value.wire()
			}
			out = append(out, e)
		}
		return out
	}
	if len(m.QueryString) > 0 {
		o["queryString"] = kv(m.QueryString)
	}
	if len(m.Headers) > 0 {
		o["headers"] = kv(m.Headers)
	}
	return o
}

func (m *Matcher) wire() map[string]string {
	switch {
	case m.Exact != "":
		return map[string]string{"exact": m.Exact}
	case m.StartsWith != "":
		return map[string]string{"startsWith": m.StartsWith}
	default:
		return map[string]string{"regex": m.Regex}
	}
}
