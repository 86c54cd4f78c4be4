// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"errors"
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

// serviceConfig is the service config that would run policyConfig's
// balancer on a channel, for the tests.
func serviceConfig(p resources.LBPolicy, hashHeader string) (string, error) {
	name, cfg, err := policyConfig(p, hashHeader)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string][]map[string]any{"loadBalancingConfig": {{name: cfg}}})
	return string(b), err
}
