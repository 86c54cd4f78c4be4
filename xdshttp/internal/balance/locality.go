// SPDX-License-Identifier: Apache-2.0

package balance

import "math/rand/v2"

// localityWeight is the effective weight of a locality of weight w with
// avail of its total endpoints not ejected, Envoy's locality weighted load
// balancing (docs/http.md "Load balancing";
// https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/locality_weight):
// w times its availability, the share of endpoints not ejected times the
// overprovisioning factor 1.4, capped at 1, in thousandths. In panic every
// endpoint counts: the weight is w alone (Envoy balances over the whole
// priority then; this client keeps the locality weights, as gRPC always
// does).
func localityWeight(w uint32, avail, total int, panic bool) uint64 {
	if panic {
		return uint64(w) * 1000
	}
	if total == 0 {
		return 0
	}
	return uint64(w) * min(1000, uint64(avail)*overprovisioning*10/uint64(total))
}

// pickLocality returns the index of a locality at random by the
// cumulative effective weights cum (the last is the total, > 0).
func pickLocality(cum []uint64) int {
	if len(cum) == 1 {
		return 0
	}
	x := rand.Uint64N(cum[len(cum)-1])
	for i, c := range cum {
		if x < c {
			return i
		}
	}
	return len(cum) - 1
}
