// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/balancer"

	"github.com/proxyless/xds/resources"
)

// The names of the grpc balancers the service configs name; their
// packages are imported by builder.go.
const (
	lbRoundRobin         = "round_robin"                // balancer/roundrobin
	lbRingHash           = "ring_hash_experimental"     // balancer/ringhash
	lbLeastRequest       = "least_request_experimental" // balancer/leastrequest
	lbPickFirst          = "pick_first"                 // balancer/pickfirst
	lbWeightedRoundRobin = "weighted_round_robin"       // balancer/weightedroundrobin
)

// balancerPackages are the packages that register the balancers above.
var balancerPackages = map[string]string{
	lbRoundRobin:         "google.golang.org/grpc/balancer/roundrobin",
	lbRingHash:           "google.golang.org/grpc/balancer/ringhash",
	lbLeastRequest:       "google.golang.org/grpc/balancer/leastrequest",
	lbPickFirst:          "google.golang.org/grpc/balancer/pickfirst",
	lbWeightedRoundRobin: "google.golang.org/grpc/balancer/weightedroundrobin",
}

// policyConfig returns the grpc balancer of policy p and its config (to
// encode in JSON): round_robin, ring_hash_experimental (with hashHeader as
// its requestHashHeader), least_request_experimental, pick_first,
// weighted_round_robin, or a custom policy's balancer with its JSON
// config (gRFC A52). It returns an error wrapping ErrUnsupported for a
// policy it does not know, or whose balancer is not registered with grpc.
func policyConfig(p resources.LBPolicy, hashHeader string) (string, any, error) {
	var (
		name string
		cfg  any
	)
	switch p.Kind {
	case resources.LBPolicyRoundRobin:
		name, cfg = lbRoundRobin, struct{}{}
	case resources.LBPolicyRingHash:
		// The ring sizes are validated by package resources within the
		// bounds ring_hash accepts (≤ 8M, min ≤ max); ring_hash caps them
		// at GRPC_RING_HASH_CAP (4096 by default).
		name, cfg = lbRingHash, struct {
			MinRingSize       uint64 `json:"minRingSize,omitempty"`
			MaxRingSize       uint64 `json:"maxRingSize,omitempty"`
			RequestHashHeader string `json:"requestHashHeader,omitempty"`
		}{p.RingHashMinSize, p.RingHashMaxSize, hashHeader}
	case resources.LBPolicyLeastRequest:
		name, cfg = lbLeastRequest, struct {
			ChoiceCount uint32 `json:"choiceCount,omitempty"`
		}{p.LeastRequestChoiceCount}
	case resources.LBPolicyPickFirst:
		name, cfg = lbPickFirst, struct {
			ShuffleAddressList bool `json:"shuffleAddressList"`
		}{p.PickFirstShuffleAddressList}
	case resources.LBPolicyWeightedRoundRobin:
		w := p.WeightedRoundRobin
		if w == nil {
			w = &resources.WeightedRoundRobinConfig{}
		}
		name, cfg = lbWeightedRoundRobin, struct {
			EnableOOBLoadReport     bool    `json:"enableOobLoadReport,omitempty"`
			OOBReportingPeriod      string  `json:"oobReportingPeriod,omitempty"`
			BlackoutPeriod          string  `json:"blackoutPeriod,omitempty"`
			WeightExpirationPeriod  string  `json:"weightExpirationPeriod,omitempty"`
			WeightUpdatePeriod      string  `json:"weightUpdatePeriod,omitempty"`
			ErrorUtilizationPenalty float32 `json:"errorUtilizationPenalty,omitempty"`
		}{
			w.EnableOOBLoadReport,
			jsonDuration(w.OOBReportingPeriod),
			jsonDuration(w.BlackoutPeriod),
			jsonDuration(w.WeightExpirationPeriod),
			jsonDuration(w.WeightUpdatePeriod),
			w.ErrorUtilizationPenalty,
		}
	case resources.LBPolicyCustom:
		if p.Custom == nil {
			return "", nil, fmt.Errorf("load balancing policy %s without a balancer: %w", p.Kind, ErrUnsupported)
		}
		name, cfg = p.Custom.Name, json.RawMessage(p.Custom.Config)
		if balancer.Get(name) == nil {
			return "", nil, fmt.Errorf("load balancing policy %q (gRFC A52): no balancer of that name is registered with grpc: %w", name, ErrUnsupported)
		}
		return name, cfg, nil
	default:
		return "", nil, fmt.Errorf("load balancing policy %s: %w", p.Kind, ErrUnsupported)
	}
	if balancer.Get(name) == nil {
		return "", nil, fmt.Errorf("load balancing policy %s: grpc's %s balancer is not registered in this program (import %s): %w",
			p.Kind, name, balancerPackages[name], ErrUnsupported)
	}
	return name, cfg, nil
}

// jsonDuration formats d as a google.protobuf.Duration in JSON ("1.5s"),
// the form of durations in service configs; "" for zero (the default).
func jsonDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ns := d % time.Second; ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	return s + "s"
}

// validateHashHeader checks that name is a header ring_hash accepts as its
// requestHashHeader: a gRPC metadata key (lowercase letters, digits, "-",
// "_", "."), not a binary one.
func validateHashHeader(name string) error {
	if name == "" {
		return fmt.Errorf("empty header name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("header name %q has the character %q, not allowed in gRPC metadata keys", name, c)
		}
	}
	if strings.HasSuffix(name, "-bin") {
		return fmt.Errorf("header name %q is a binary header", name)
	}
	return nil
}
