// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

// The endpoint policies this package runs.
type policyKind uint8

const (
	roundRobin policyKind = iota
	leastRequest
	ringHash
	pickFirst
	weightedRoundRobin
)

const (
	// maxChoices caps least_request's choice_count, as gRPC does (gRFC
	// A48): more samples cost time on every pick and change little.
	maxChoices = 10
	// ringHashCapDefault is gRPC's cap of both ring sizes
	// (GRPC_RING_HASH_CAP, gRFC A42's "ring size limits").
	ringHashCapDefault = 4096
	ringHashCapLimit   = 8 * 1024 * 1024
	ringHashMinDefault = 1024
)

// PolicyConfig is what Pick runs of a leaf cluster's endpoint policy:
// Policy returns it, dataplane keeps it in Priority.PolicyConfig.
// Immutable.
type PolicyConfig struct {
	kind       policyKind
	byLocality bool
	choices    int    // least_request
	ringMin    uint64 // ring_hash
	ringMax    uint64
	shuffle    bool  // pick_first
	panicAt    uint8 // healthy_panic_threshold, percent; 0: never
	note       string
}

// Note says how the HTTP path runs the policy differently from what it
// names (weighted_round_robin without ORCA, a custom gRPC balancer): for
// the caller to log once per cluster. "" when it runs as named.
func (c *PolicyConfig) Note() string { return c.note }

// Policy is dataplane.Options.Policy for HTTP (docs/http.md "Load
// balancing"): it accepts the endpoint policy p of a leaf cluster and
// returns the *PolicyConfig that Pick runs:
//
//   - round_robin: in turn, from a random start, per locality under
//     wrr_locality (p.WeightedByLocality), else over the priority;
//   - least_request: the endpoint with the fewest requests in flight of
//     choice_count (at most 10, as gRPC) picked at random;
//   - ring_hash: gRPC's ring over the priority, its sizes capped as gRPC
//     caps them (GRPC_RING_HASH_CAP, 4096 by default);
//   - pick_first: the first endpoint in order, or in an order shuffled
//     once per configuration (shuffle_address_list);
//   - weighted_round_robin and custom policies: weighted round robin by
//     endpoint weight, with a Note (no ORCA load reports over HTTP; a gRPC
//     balancer does not run on HTTP).
//
// It fails, wrapping dataplane.ErrUnsupported, for a kind it does not know.
// Safe for concurrent use.
func Policy(p resources.LBPolicy) (any, error) {
	c := &PolicyConfig{byLocality: p.WeightedByLocality, panicAt: min(p.HealthyPanicThreshold, 100)}
	switch p.Kind {
	case resources.LBPolicyRoundRobin:
		c.kind = roundRobin
	case resources.LBPolicyLeastRequest:
		c.kind = leastRequest
		c.choices = int(min(max(p.LeastRequestChoiceCount, 2), maxChoices))
	case resources.LBPolicyRingHash:
		// gRPC builds the ring over the whole priority, whatever
		// wrapped it (gRFC A42).
		c.kind, c.byLocality = ringHash, false
		capSize := ringHashCap()
		c.ringMin, c.ringMax = ringHashMinDefault, capSize
		if p.RingHashMinSize != 0 {
			c.ringMin = p.RingHashMinSize
		}
		if p.RingHashMaxSize != 0 {
			c.ringMax = p.RingHashMaxSize
		}
		c.ringMin, c.ringMax = min(c.ringMin, capSize), min(c.ringMax, capSize)
	case resources.LBPolicyPickFirst:
		c.kind, c.shuffle = pickFirst, p.PickFirstShuffleAddressList
	case resources.LBPolicyWeightedRoundRobin:
		c.kind = weightedRoundRobin
		c.note = "weighted_round_robin runs as weighted round robin by endpoint weight: no ORCA load reports over HTTP"
	case resources.LBPolicyCustom:
		c.kind = weightedRoundRobin
		name := "?"
		if p.Custom != nil {
			name = p.Custom.Name
		}
		c.note = fmt.Sprintf("custom load balancing policy %q runs as weighted round robin by endpoint weight: gRPC balancers do not run on HTTP", name)
	default:
		return nil, fmt.Errorf("load balancing policy %v: %w", p.Kind, dataplane.ErrUnsupported)
	}
	return c, nil
}

// ringHashCap is gRPC's cap of the ring sizes: GRPC_RING_HASH_CAP, within
// [1, 8M], 4096 when unset or not a number, read as grpc-go reads it, so
// that a process that changes it builds the same rings on both paths.
func ringHashCap() uint64 {
	v, err := strconv.ParseUint(os.Getenv("GRPC_RING_HASH_CAP"), 10, 64)
	if err != nil {
		return ringHashCapDefault
	}
	return min(max(v, 1), ringHashCapLimit)
}

// policyOf returns the config of priority p: the *PolicyConfig of
// Policy, or one computed from p.Policy when p was built without it (a
// policy Policy rejects runs as round robin).
func policyOf(p *dataplane.Priority) *PolicyConfig {
	if c, ok := p.PolicyConfig.(*PolicyConfig); ok {
		return c
	}
	c, err := Policy(p.Policy)
	if err != nil {
		return &PolicyConfig{kind: roundRobin, byLocality: p.Policy.WeightedByLocality, panicAt: min(p.Policy.HealthyPanicThreshold, 100), note: err.Error()}
	}
	return c.(*PolicyConfig)
}

// member is one endpoint of a set.
type member struct {
	ep     *dataplane.Endpoint
	loc    *dataplane.Locality
	host   *Host
	weight uint64 // weighted round robin and ring hash
}

// set is the endpoints that one endpoint policy balances over: those of
// a locality, or of a whole priority. Its fields are set by New, but for
// next.
type set struct {
	cfg     *PolicyConfig
	members []member
	wrr     weights // weighted round robin over every member
	ring    *ring   // ring hash
	next    atomic.Uint64
}

// weights is a weighted round robin schedule: counter value c picks the
// member i (of the set, or of an avail list) whose range [cum[i-1],
// cum[i]) holds frac(c·φ)·total, φ the golden ratio. The fractional parts
// of c·φ (a Weyl sequence) are the most evenly spread sequence there is
// over [0, 1): each member gets its share of any run of consecutive picks
// within a few picks, and its picks are spread over the run rather than
// bunched, with one atomic counter and no lock.
type weights struct {
	cum   []uint64
	total uint64
}

// golden is 2⁶⁴/φ: c·golden mod 2⁶⁴ is frac(c/φ) = frac(c·φ) in 0.64 fixed
// point.
const golden = 0x9e3779b97f4a7c15

func newWeights(cum []uint64) weights {
	w := weights{cum: cum}
	if len(cum) > 0 {
		w.total = cum[len(cum)-1]
	}
	return w
}

// at returns the index of the member of counter value c.
func (w *weights) at(c uint64) int {
	x, _ := bits.Mul64(c*golden, w.total)
	i, j := 0, len(w.cum)-1
	for i < j {
		h := int(uint(i+j) >> 1)
		if w.cum[h] > x {
			j = h
		} else {
			i = h + 1
		}
	}
	return i
}

// setState is what a set's picks need of the ejections: the members not
// ejected.
type setState struct {
	// avail are the indexes of the members not ejected; nil when none is.
	avail []int32
	// n is the number of members not ejected.
	n int
	// wrr is the weighted round robin schedule of avail.
	wrr weights
}

// pick picks a member of s: among those not ejected (st), or among all
// in panic. It reports false when there is none.
func (s *set) pick(st *setState, panic bool, r Request) (*member, bool) {
	all := panic || st.avail == nil
	if len(s.members) == 0 || !panic && st.n == 0 {
		return nil, false
	}
	n := len(s.members)
	if !all {
		n = len(st.avail)
	}
	var i int // index in avail, or in members when all
	switch s.cfg.kind {
	case ringHash:
		return s.ring.pick(s, r, panic)
	case roundRobin:
		i = int(s.next.Add(1) % uint64(n))
	case pickFirst:
		i = 0
	case leastRequest:
		i = s.leastRequest(st, all, n)
	case weightedRoundRobin:
		w := &s.wrr
		if !all {
			w = &st.wrr
		}
		i = w.at(s.next.Add(1))
	}
	if !all {
		i = int(st.avail[i])
	}
	m := &s.members[i]
	if !panic && m.host.Ejected() {
		// Ejected since st was computed: the next Pick computes it
		// again; this one takes the next member that is not.
		return s.scan(i)
	}
	return m, true
}

// leastRequest is Envoy's power of choices (gRFC A48): of choices members
// picked at random (with repetition), the one with the fewest requests in
// flight, the first sampled on a tie; it returns its index in avail, or
// in members when all.
func (s *set) leastRequest(st *setState, all bool, n int) int {
	best, bestN := 0, int64(-1)
	for range s.cfg.choices {
		i := rand.IntN(n)
		j := i
		if !all {
			j = int(st.avail[i])
		}
		if f := s.members[j].host.InFlight(); bestN < 0 || f < bestN {
			best, bestN = i, f
		}
	}
	return best
}

// scan returns the first member not ejected from index i on, in the
// set's order.
func (s *set) scan(i int) (*member, bool) {
	for k := range len(s.members) {
		m := &s.members[(i+k)%len(s.members)]
		if !m.host.Ejected() {
			return m, true
		}
	}
	return nil, false
}
