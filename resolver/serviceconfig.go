// SPDX-License-Identifier: Apache-2.0

package resolver

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

// serviceConfig returns the service config (JSON) that runs the grpc
// balancer of policy p on a channel: round_robin, ring_hash_experimental
// (with hashHeader as its requestHashHeader), least_request_experimental,
// pick_first or weighted_round_robin. It returns an error wrapping
// ErrUnsupported for a policy it does not know, or whose balancer is not
// registered with grpc.
func serviceConfig(p resources.LBPolicy, hashHeader string) (string, error) {
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
	default:
		return "", fmt.Errorf("load balancing policy %s: %w", p.Kind, ErrUnsupported)
	}
	if balancer.Get(name) == nil {
		return "", fmt.Errorf("load balancing policy %s: grpc's %s balancer is not registered in this program (import %s): %w",
			p.Kind, name, balancerPackages[name], ErrUnsupported)
	}
	b, err := json.Marshal(map[string][]map[string]any{"loadBalancingConfig": {{name: cfg}}})
	if err != nil {
		// Only strings, numbers and booleans: cannot fail.
		return "", fmt.Errorf("encoding the service config: %w", err)
	}
	return string(b), nil
}

// lbName returns the balancer name of a service config made by
// serviceConfig, for messages.
func lbName(sc string) string {
	var v struct {
		LoadBalancingConfig []map[string]json.RawMessage `json:"loadBalancingConfig"`
	}
	if json.Unmarshal([]byte(sc), &v) == nil && len(v.LoadBalancingConfig) == 1 {
		for name, cfg := range v.LoadBalancingConfig[0] {
			return name + " " + string(cfg)
		}
	}
	return sc
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

// requestHashHeader returns the header ring_hash hashes for the RPCs of a
// route with hash policies hps (gRFC A42), as ring_hash's
// requestHashHeader (gRFC A76): the header of a single header policy
// without regex_rewrite, which hashes like gRPC's xDS config selector
// (the values joined with ","; a random hash when the header is absent).
// Header policies on "-bin" headers are skipped, as gRPC skips them. With
// no policy left, fallback. Anything else (a channel_id policy, several
// headers, a regex_rewrite) cannot be expressed with ring_hash: an error
// wrapping ErrUnsupported.
func requestHashHeader(hps []resources.HashPolicy, fallback string) (string, error) {
	var header *resources.HashPolicy
	for i := range hps {
		hp := &hps[i]
		switch hp.Kind {
		case resources.HashPolicyHeader:
			if strings.HasSuffix(strings.ToLower(hp.HeaderName), "-bin") {
				continue
			}
			if header != nil {
				return "", fmt.Errorf("hash policies on headers %q and %q: only one header can be hashed: %w", header.HeaderName, hp.HeaderName, ErrUnsupported)
			}
			header = hp
		case resources.HashPolicyChannelID:
			return "", fmt.Errorf("hash policy filter_state io.grpc.channel_id: %w", ErrUnsupported)
		default:
			return "", fmt.Errorf("hash policy %s: %w", hp.Kind, ErrUnsupported)
		}
	}
	if header == nil {
		return fallback, nil
	}
	if header.RegexRewrite != nil {
		return "", fmt.Errorf("hash policy on header %q with regex_rewrite: %w", header.HeaderName, ErrUnsupported)
	}
	name := strings.ToLower(header.HeaderName)
	if err := validateHashHeader(name); err != nil {
		return "", fmt.Errorf("hash policy on header %q: %w: %w", header.HeaderName, err, ErrUnsupported)
	}
	return name, nil
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
