package sandbox

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request bodies are pinned byte for byte: the official SDK and the
// API tell an omitted field from a null one, and an empty list from none.

func richPolicy() *NetworkPolicy {
	return &NetworkPolicy{
		AllowRules: map[string][]NetworkRule{
			"api.example.com": {
				{Match: &Match{Path: &StringMatcher{StartsWith: "/v1"}, Method: []string{"GET", "POST"},
					QueryString: []KeyValueMatch{{Key: &StringMatcher{Exact: "k"}, Value: &StringMatcher{Regex: "^v"}}},
					Headers:     []KeyValueMatch{{Key: &StringMatcher{Exact: "X-A"}}}},
					Transform: []Transform{{Headers: map[string]string{"Authorization": "Bearer x"}}, {}}},
				{ForwardURL: "https://proxy.example.com"},
				{Match: &Match{}, Response: &DirectResponse{StatusCode: 403}},
				{Response: &DirectResponse{StatusCode: 200, Headers: map[string]string{"A": "b"}, Body: "ok", ContentType: "text/plain"}},
			},
			"plain.example.com": {},
		},
		Subnets: &Subnets{Allow: []string{"10.0.0.0/8"}, Deny: []string{"10.1.0.0/16"}},
	}
}

func TestNetworkPolicyJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		p    *NetworkPolicy
		want string
	}{
		{"allow-all", AllowAll(), `{"mode":"allow-all"}`},
		{"deny-all", DenyAll(), `{"mode":"deny-all"}`},
		{"empty custom", &NetworkPolicy{}, `{}`},
		{"domains", &NetworkPolicy{Allow: []string{"github.com", "*.npmjs.org"}}, `{"allow":["github.com","*.npmjs.org"]}`},
		{"empty subnets", &NetworkPolicy{Subnets: &Subnets{}}, `{"subnets":{}}`},
		{"rules", richPolicy(), `{"allow":{"api.example.com":[{"match":{"headers":[{"key":{"exact":"X-A"}}],"method":["GET","POST"],"path":{"startsWith":"/v1"},"queryString":[{"key":{"exact":"k"},"value":{"regex":"^v"}}]},"transform":[{"headers":{"Authorization":"Bearer x"}},{"headers":null}]},{"forwardURL":"https://proxy.example.com"},{"match":{},"response":{"statusCode":403}},{"response":{"body":"ok","contentType":"text/plain","headers":{"A":"b"},"statusCode":200}}],"plain.example.com":[]},"subnets":{"allow":["10.0.0.0/8"],"deny":["10.1.0.0/16"]}}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.p)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), c.name)
	}
}

func TestForkRequestJSON(t *testing.T) {
	t.Parallel()
	exp := 48 * time.Hour
	cases := []struct {
		name string
		p    ForkParams
		want string
	}{
		{"empty", ForkParams{}, `{}`},
		{"empty lists are sent", ForkParams{Ports: []int{}, Env: map[string]string{}, Tags: map[string]string{}, FailoverRegions: []string{}}, `{"env":{},"failoverRegions":[],"ports":[],"tags":{}}`},
		{"all", ForkParams{Name: "f", Image: "img", VCPUs: 2, Timeout: time.Minute, Ports: []int{3000}, Env: map[string]string{"A": "1"},
			Tags: map[string]string{"t": "v"}, NetworkPolicy: DenyAll(), Persistent: new(bool), Region: "iad1",
			FailoverRegions: []string{"sfo1"}, SnapshotExpiration: &exp, KeepLastSnapshots: &KeepLastSnapshots{Count: 2}, NetworkID: "net_1"}, `{"env":{"A":"1"},"failoverRegions":["sfo1"],"image":"img","keepLastSnapshots":{"count":2},"name":"f","networkId":"net_1","networkPolicy":{"mode":"deny-all"},"persistent":false,"ports":[3000],"region":"iad1","resources":{"vcpus":2},"snapshotExpiration":172800000,"tags":{"t":"v"},"timeout":60000}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.p.toWire())
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), c.name)
	}
}

func TestUpdateRequestJSON(t *testing.T) {
	t.Parallel()
	exp := time.Duration(0)
	yes := true
	cases := []struct {
		name string
		p    UpdateParams
		want string
	}{
		{"empty", UpdateParams{}, `{}`},
		{"clear retention", UpdateParams{ClearKeepLastSnapshots: true}, `{"keepLastSnapshots":null}`},
		{"out of the private network", UpdateParams{ClearNetworkID: true}, `{"networkId":null}`},
		{"empty lists are sent", UpdateParams{Ports: []int{}, Tags: map[string]string{}, FailoverRegions: []string{}, Mounts: map[string]Mount{}}, `{"failoverRegions":[],"mounts":{},"ports":[],"tags":{}}`},
		{"all", UpdateParams{Persistent: &yes, VCPUs: 4, Timeout: time.Hour, NetworkPolicy: richPolicy(), Tags: map[string]string{"a": "b"},
			Ports: []int{80}, SnapshotExpiration: &exp, KeepLastSnapshots: &KeepLastSnapshots{Count: 1, Expiration: &exp},
			CurrentSnapshotID: "snap_1", Region: "iad1", FailoverRegions: []string{"sfo1"}, NetworkID: "net_1",
			Mounts: map[string]Mount{"/data": {Drive: "d1", Mode: "rw"}}}, `{"currentSnapshotId":"snap_1","failoverRegions":["sfo1"],"keepLastSnapshots":{"count":1,"expiration":0},"mounts":{"/data":{"drive":"d1","mode":"rw"}},"networkId":"net_1","networkPolicy":{"allow":{"api.example.com":[{"match":{"headers":[{"key":{"exact":"X-A"}}],"method":["GET","POST"],"path":{"startsWith":"/v1"},"queryString":[{"key":{"exact":"k"},"value":{"regex":"^v"}}]},"transform":[{"headers":{"Authorization":"Bearer x"}},{"headers":null}]},{"forwardURL":"https://proxy.example.com"},{"match":{},"response":{"statusCode":403}},{"response":{"body":"ok","contentType":"text/plain","headers":{"A":"b"},"statusCode":200}}],"plain.example.com":[]},"subnets":{"allow":["10.0.0.0/8"],"deny":["10.1.0.0/16"]}},"persistent":true,"ports":[80],"region":"iad1","resources":{"vcpus":4,"memory":8192},"snapshotExpiration":0,"tags":{"a":"b"},"timeout":3600000}`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.p.toWire())
		require.NoError(t, err)
		assert.Equal(t, c.want, string(got), c.name)
	}
}

// Drive mounts travel as the SDK sends them; the local server refuses
// them, so only the body proves the create's side.
func TestCreateRequestMountsJSON(t *testing.T) {
	t.Parallel()
	d := Drive{Name: "cache"}
	p := CreateParams{Name: "m", Mounts: map[string]Mount{"/mnt/cache": d.Mount(), "/mnt/ro": d.SnapshotMount()}}
	w, err := p.toWire("prj_1")
	require.NoError(t, err)
	got, err := json.Marshal(w.Mounts)
	require.NoError(t, err)
	assert.JSONEq(t, `{"/mnt/cache":{"drive":"cache","mode":"read-write"},"/mnt/ro":{"drive":"cache","mode":"snapshot"}}`, string(got))
}
