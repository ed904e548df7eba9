package wire

import "encoding/json"

// The request form of a network policy. Fields are declared in the order
// of their JSON names, which is the order the API has always received.

// NetworkPolicy is the request form of a network policy: a Mode alone, or
// Allow and Subnets for a custom policy.
type NetworkPolicy struct {
	Allow   *NetworkAllow `json:"allow,omitempty"`
	Mode    string        `json:"mode,omitempty"`
	Subnets *Subnets      `json:"subnets,omitempty"`
}

// NetworkAllow is the allow field: a list of domains, or, when Rules is
// set, an object mapping each domain to the rules applied to its traffic.
type NetworkAllow struct {
	Domains []string
	Rules   map[string][]NetworkRule
}

// MarshalJSON encodes the rules when any are set, else the domains.
func (a NetworkAllow) MarshalJSON() ([]byte, error) {
	if a.Rules != nil {
		return json.Marshal(a.Rules)
	}
	return json.Marshal(a.Domains)
}

// Subnets are CIDR ranges.
type Subnets struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// NetworkRule applies to the traffic to one domain.
type NetworkRule struct {
	ForwardURL string          `json:"forwardURL,omitempty"`
	Match      *Match          `json:"match,omitempty"`
	Response   *DirectResponse `json:"response,omitempty"`
	Transform  []Transform     `json:"transform,omitempty"`
}

// Match selects requests.
type Match struct {
	Headers     []KeyValueMatch `json:"headers,omitempty"`
	Method      []string        `json:"method,omitempty"`
	Path        *StringMatcher  `json:"path,omitempty"`
	QueryString []KeyValueMatch `json:"queryString,omitempty"`
}

// KeyValueMatch matches a query parameter or header.
type KeyValueMatch struct {
	Key   *StringMatcher `json:"key,omitempty"`
	Value *StringMatcher `json:"value,omitempty"`
}

// StringMatcher matches a string; one field is set.
type StringMatcher struct {
	Exact      string `json:"exact,omitempty"`
	Regex      string `json:"regex,omitempty"`
	StartsWith string `json:"startsWith,omitempty"`
}

// Transform adds headers to matching requests. Headers is always sent.
type Transform struct {
	Headers map[string]string `json:"headers"`
}

// DirectResponse answers matching requests without contacting the domain.
type DirectResponse struct {
	Body        string            `json:"body,omitempty"`
	ContentType string            `json:"contentType,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	StatusCode  int               `json:"statusCode"`
}
