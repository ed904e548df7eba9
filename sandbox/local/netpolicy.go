package local

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/sbx-go/vercel-sandbox/internal/wire"
)

// NetworkReporter is an Executor that decides the network of the commands
// of a sandbox that has no network policy. DefaultNetworkPolicy returns
// what they get, as a policy mode: "deny-all" when they see a loopback of
// their own only, "allow-all" when they reach the host's network. The
// server reports that mode for such a sandbox; with any other executor it
// reports "allow-all", the default of hosted Vercel. Package isolated
// implements it.
type NetworkReporter interface {
	Executor
	DefaultNetworkPolicy() string
}

// defaultPolicy is the network policy reported for a sandbox created
// without one: what its commands get.
func (s *Server) defaultPolicy() *wire.NetworkPolicyResp {
	mode := "allow-all"
	if nr, ok := s.exec.(NetworkReporter); ok {
		if m := nr.DefaultNetworkPolicy(); m == "deny-all" {
			mode = m
		}
	}
	return &wire.NetworkPolicyResp{Mode: mode}
}

// policyRule is one rule of the request form of a network policy.
type policyRule struct {
	Match     json.RawMessage `json:"match,omitempty"`
	Transform []struct {
		Headers map[string]string `json:"headers"`
	} `json:"transform,omitempty"`
	ForwardURL string          `json:"forwardURL,omitempty"`
	Response   json.RawMessage `json:"response,omitempty"`
}

// legacyPolicy is the v1 request form ({"mode":"custom",…}).
type legacyPolicy struct {
	Mode           string   `json:"mode"`
	AllowedDomains []string `json:"allowedDomains"`
	AllowedCIDRs   []string `json:"allowedCIDRs"`
	DeniedCIDRs    []string `json:"deniedCIDRs"`
	InjectionRules []struct {
		Domain      string            `json:"domain"`
		Headers     map[string]string `json:"headers"`
		HeaderNames []string          `json:"headerNames"`
		Match       json.RawMessage   `json:"match"`
	} `json:"injectionRules"`
	ForwardRules []wire.ForwardRule `json:"forwardRules"`
}

// policyFromRequest converts the request form of a network policy into the
// response form the API answers with. Header values never survive: only
// their names are kept.
func policyFromRequest(raw []byte) (*wire.NetworkPolicyResp, *apiError) {
	raw = bytes.TrimSpace(raw)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, badRequest("networkPolicy must be an object.")
	}
	if m, ok := obj["mode"]; ok {
		var mode string
		if err := json.Unmarshal(m, &mode); err != nil {
			return nil, badRequest("networkPolicy.mode must be a string.")
		}
		switch mode {
		case "allow-all", "deny-all":
			return &wire.NetworkPolicyResp{Mode: mode}, nil
		case "custom":
			var lp legacyPolicy
			if err := json.Unmarshal(raw, &lp); err != nil {
				return nil, badRequest("invalid networkPolicy: %v", err)
			}
			resp := &wire.NetworkPolicyResp{
				Mode:           "custom",
				AllowedDomains: slices.Clone(lp.AllowedDomains),
				AllowedCIDRs:   slices.Clone(lp.AllowedCIDRs),
				DeniedCIDRs:    slices.Clone(lp.DeniedCIDRs),
				ForwardRules:   slices.Clone(lp.ForwardRules),
			}
			for _, ir := range lp.InjectionRules {
				names := slices.Sorted(maps.Keys(ir.Headers))
				names = append(names, ir.HeaderNames...)
				resp.InjectionRules = append(resp.InjectionRules, wire.InjectionRule{
					Domain: ir.Domain, HeaderNames: names, Match: ir.Match,
				})
			}
			return resp, nil
		}
		return nil, badRequest("Unknown networkPolicy mode %q.", mode)
	}

	resp := &wire.NetworkPolicyResp{Mode: "custom"}
	if a, ok := obj["allow"]; ok && string(a) != "null" {
		var list []string
		var rules map[string][]policyRule
		switch {
		case json.Unmarshal(a, &list) == nil:
			resp.AllowedDomains = list
		case json.Unmarshal(a, &rules) == nil:
			for _, domain := range slices.Sorted(maps.Keys(rules)) {
				resp.AllowedDomains = append(resp.AllowedDomains, domain)
				for _, rule := range rules[domain] {
					if len(rule.Transform) > 0 {
						var names []string
						for _, t := range rule.Transform {
							names = append(names, slices.Sorted(maps.Keys(t.Headers))...)
						}
						resp.InjectionRules = append(resp.InjectionRules, wire.InjectionRule{
							Domain: domain, HeaderNames: names, Match: rule.Match,
						})
					}
					if rule.ForwardURL != "" {
						resp.ForwardRules = append(resp.ForwardRules, wire.ForwardRule{
							Domain: domain, ForwardURL: rule.ForwardURL, Match: rule.Match,
						})
					}
				}
			}
		default:
			return nil, badRequest("networkPolicy.allow must be a list of domains or a map of domain rules.")
		}
	}
	if sn, ok := obj["subnets"]; ok && string(sn) != "null" {
		var subnets struct {
			Allow []string `json:"allow"`
			Deny  []string `json:"deny"`
		}
		if err := json.Unmarshal(sn, &subnets); err != nil {
			return nil, badRequest("invalid networkPolicy.subnets: %v", err)
		}
		resp.AllowedCIDRs, resp.DeniedCIDRs = subnets.Allow, subnets.Deny
	}
	return resp, nil
}
