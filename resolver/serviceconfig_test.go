// SPDX-License-Identifier: Apache-2.0

package resolver

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"

	"github.com/proxyless/xds/resources"
)

// parseWithBalancer checks sc with the ParseConfig of the grpc balancer it
// names, which rejects unknown fields' values it cannot parse.
func parseWithBalancer(t *testing.T, sc string) {
	t.Helper()
	var v struct {
		LoadBalancingConfig []map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if err := json.Unmarshal([]byte(sc), &v); err != nil || len(v.LoadBalancingConfig) != 1 || len(v.LoadBalancingConfig[0]) != 1 {
		t.Fatalf("service config %s: not one loadBalancingConfig (%v)", sc, err)
	}
	for name, cfg := range v.LoadBalancingConfig[0] {
		b := balancer.Get(name)
		if b == nil {
			t.Fatalf("service config %s: balancer %q is not registered", sc, name)
		}
		if p, ok := b.(balancer.ConfigParser); ok {
			if _, err := p.ParseConfig(cfg); err != nil {
				t.Errorf("balancer %q rejects %s: %v", name, cfg, err)
			}
		}
	}
}

// TestResolver_ServiceConfig_Policies checks the service config of each
// load balancing policy, and that grpc's balancer accepts it.
func TestResolver_ServiceConfig_Policies(t *testing.T) {
	tests := []struct {
		name string
		p    resources.LBPolicy
		want string
	}{
		{
			name: "round robin",
			p:    resources.LBPolicy{Kind: resources.LBPolicyRoundRobin, WeightedByLocality: true},
			want: `{"loadBalancingConfig":[{"round_robin":{}}]}`,
		},
		{
			name: "least request",
			p:    resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 4},
			want: `{"loadBalancingConfig":[{"least_request_experimental":{"choiceCount":4}}]}`,
		},
		{
			name: "pick first",
			p:    resources.LBPolicy{Kind: resources.LBPolicyPickFirst, PickFirstShuffleAddressList: true},
			want: `{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":true}}]}`,
		},
		{
			name: "weighted round robin",
			p: resources.LBPolicy{Kind: resources.LBPolicyWeightedRoundRobin, WeightedRoundRobin: &resources.WeightedRoundRobinConfig{
				EnableOOBLoadReport:     true,
				OOBReportingPeriod:      10 * time.Second,
				BlackoutPeriod:          1500 * time.Millisecond,
				WeightExpirationPeriod:  3 * time.Minute,
				WeightUpdatePeriod:      time.Second + time.Nanosecond,
				ErrorUtilizationPenalty: 0.5,
			}},
			want: `{"loadBalancingConfig":[{"weighted_round_robin":{"enableOobLoadReport":true,"oobReportingPeriod":"10s","blackoutPeriod":"1.5s","weightExpirationPeriod":"180s","weightUpdatePeriod":"1.000000001s","errorUtilizationPenalty":0.5}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := serviceConfig(tt.p, "")
			if err != nil {
				t.Fatalf("serviceConfig: %v", err)
			}
			if got != tt.want {
				t.Errorf("serviceConfig = %s\nwant %s", got, tt.want)
			}
			parseWithBalancer(t, got)
		})
	}
}

// TestResolver_ServiceConfig_RingHash checks the ring_hash config, or,
// when the program does not link grpc's ring_hash balancer, the error
// that says which package to import.
func TestResolver_ServiceConfig_RingHash(t *testing.T) {
	p := resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 10, RingHashMaxSize: 100}
	got, err := serviceConfig(p, "x-user")
	if balancer.Get(lbRingHash) == nil {
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "import google.golang.org/grpc/balancer/ringhash") {
			t.Errorf("serviceConfig without ring_hash registered = %q, %v; want ErrUnsupported naming the package", got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("serviceConfig: %v", err)
	}
	if want := `{"loadBalancingConfig":[{"ring_hash_experimental":{"minRingSize":10,"maxRingSize":100,"requestHashHeader":"x-user"}}]}`; got != want {
		t.Errorf("serviceConfig = %s\nwant %s", got, want)
	}
	parseWithBalancer(t, got)
}

// TestResolver_ServiceConfig_HashPolicies checks the request hash header
// ring_hash gets for each set of route hash policies.
func TestResolver_ServiceConfig_HashPolicies(t *testing.T) {
	header := func(name string) resources.HashPolicy {
		return resources.HashPolicy{Kind: resources.HashPolicyHeader, HeaderName: name}
	}
	rewrite := header("x-user")
	rewrite.RegexRewrite, rewrite.RegexRewritePattern = regexp.MustCompile("a"), "a"
	tests := []struct {
		name    string
		hps     []resources.HashPolicy
		want    string
		wantErr string
	}{
		{name: "none: the fallback", want: "fallback"},
		{name: "one header", hps: []resources.HashPolicy{header("X-User")}, want: "x-user"},
		{name: "binary header skipped", hps: []resources.HashPolicy{header("x-trace-bin")}, want: "fallback"},
		{name: "binary header skipped next to one", hps: []resources.HashPolicy{header("x-trace-bin"), header("x-user")}, want: "x-user"},
		{name: "channel id", hps: []resources.HashPolicy{{Kind: resources.HashPolicyChannelID}}, wantErr: "io.grpc.channel_id"},
		{name: "two headers", hps: []resources.HashPolicy{header("x-a"), header("x-b")}, wantErr: `headers "x-a" and "x-b"`},
		{name: "regex rewrite", hps: []resources.HashPolicy{rewrite}, wantErr: "regex_rewrite"},
		{name: "invalid header name", hps: []resources.HashPolicy{header(":path")}, wantErr: `":path"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := requestHashHeader(tt.hps, "fallback")
			if tt.wantErr != "" {
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("requestHashHeader = %q, %v; want ErrUnsupported containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("requestHashHeader = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestResolver_ServiceConfig_RingHashRoute checks that resolve gives
// ring_hash the route's hash header, and fails on a route whose hash
// policies cannot be expressed, but not when the policy is not ring hash.
func TestResolver_ServiceConfig_RingHashRoute(t *testing.T) {
	ringHash := resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 4096}
	route := func(hps ...resources.HashPolicy) []resources.Route {
		a := toCluster("c")
		a.HashPolicies = hps
		return []resources.Route{catchAll(a)}
	}
	channelID := resources.HashPolicy{Kind: resources.HashPolicyChannelID}
	c := leaf("c", ringHash, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))

	_, err := resolve(snap(route(channelID), ok(c)), randomHashHeader)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `cluster "c": RING_HASH: hash policy filter_state io.grpc.channel_id`) {
		t.Errorf("resolve with a channel_id policy = %v, want ErrUnsupported naming the cluster and policy", err)
	}
	rr := leaf("c", roundRobin, locality("z", 0, 1, endpoint("10.0.0.1:80", healthy, 1)))
	if _, err := resolve(snap(route(channelID), ok(rr)), randomHashHeader); err != nil {
		t.Errorf("resolve with a channel_id policy and round robin: %v; hash policies only matter to ring hash", err)
	}

	if balancer.Get(lbRingHash) == nil {
		t.Fatal("grpc's ring_hash balancer is not registered: package resolver must import google.golang.org/grpc/balancer/ringhash")
	}
	for _, tt := range []struct {
		name     string
		hps      []resources.HashPolicy
		fallback string
		want     string
	}{
		{"route header", []resources.HashPolicy{{Kind: resources.HashPolicyHeader, HeaderName: "x-user"}}, randomHashHeader, "x-user"},
		{"no policy, no option", nil, randomHashHeader, randomHashHeader},
		{"no policy, option", nil, "x-session", "x-session"},
	} {
		res, err := resolve(snap(route(tt.hps...), ok(c)), tt.fallback)
		if err != nil {
			t.Fatalf("%s: resolve: %v", tt.name, err)
		}
		if want := `"requestHashHeader":"` + tt.want + `"`; !strings.Contains(res.serviceConfig, want) {
			t.Errorf("%s: service config %s does not contain %s", tt.name, res.serviceConfig, want)
		}
	}
}
