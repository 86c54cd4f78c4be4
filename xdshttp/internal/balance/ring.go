// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// ring is the hash ring of a ring_hash priority: the ring gRPC builds for
// the same endpoints, weights and sizes (gRFC A42; grpc-go's
// balancer/ringhash), so that a request hash lands on the endpoint a gRPC
// client's ring_hash picks for the same configuration.
type ring struct {
	entries []ringEntry // by hash
}

type ringEntry struct {
	hash   uint64
	member int32 // index in the set
}

// newRing builds the ring of members (not empty), each weighted by its
// weight (its dataplane.Endpoint.PriorityShare, as gRPC weighs the
// endpoints of a ring_hash priority), with minSize ≤ maxSize:
//
//   - each endpoint's hash key is its HashKey (gRFC A76), else its first
//     address (gRFC A61); endpoints are taken in the order of their keys;
//   - its normalized weight is its weight over the sum of the weights;
//   - the ring has ceil(scale) entries, where scale is
//     min(ceil(minWeight·minSize)/minWeight, maxSize), so that the
//     endpoint of least weight gets a whole number of entries when the
//     sizes allow;
//   - the endpoints get entries in turn while the count of entries made is
//     below the running sum of scale·weight, entry i of an endpoint
//     hashing, with XXH64 (seed 0), its key, "_", and i in decimal;
//   - the entries are sorted by hash; a request hash picks the first entry
//     whose hash is at least it, else the first.
func newRing(members []member, minSize, maxSize uint64) *ring {
	type keyed struct {
		key    string
		member int32
		weight float64
	}
	var sum uint64
	for _, m := range members {
		sum += m.weight
	}
	eps := make([]keyed, len(members))
	minWeight := 1.0
	for i, m := range members {
		k := m.ep.HashKey
		if k == "" {
			k = m.ep.Addresses[0]
		}
		w := float64(m.weight) / float64(sum)
		eps[i] = keyed{k, int32(i), w}
		minWeight = min(minWeight, w)
	}
	slices.SortFunc(eps, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })

	scale := min(math.Ceil(minWeight*float64(minSize))/minWeight, float64(maxSize))
	entries := make([]ringEntry, 0, int(math.Ceil(scale)))
	var made, target float64
	buf := make([]byte, 0, 64)
	for _, e := range eps {
		target += scale * e.weight
		for i := 0; made < target; i++ {
			buf = strconv.AppendInt(append(append(buf[:0], e.key...), '_'), int64(i), 10)
			entries = append(entries, ringEntry{hash: xxhash.Sum64(buf), member: e.member})
			made++
		}
	}
	slices.SortStableFunc(entries, func(a, b ringEntry) int { return cmp.Compare(a.hash, b.hash) })
	return &ring{entries: entries}
}

// search returns the index of the first entry whose hash is at least h,
// 0 when none is.
func (r *ring) search(h uint64) int {
	i, j := 0, len(r.entries)
	for i < j {
		m := int(uint(i+j) >> 1)
		if r.entries[m].hash < h {
			i = m + 1
		} else {
			j = m
		}
	}
	if i == len(r.entries) {
		return 0
	}
	return i
}

// pick returns the member of s (the set of the ring) of request r's hash,
// a random hash when r has none (as gRPC, gRFC A42): the entry's, or when
// its endpoint is ejected (and not in panic), the first of the following
// entries whose endpoint is not, as gRPC walks the ring past the
// endpoints it cannot use (gRFC A61) and as Envoy's ring of the healthy
// hosts would mostly pick.
func (g *ring) pick(s *set, r Request, panic bool) (*member, bool) {
	h := r.Hash
	if !r.HasHash {
		h = rand.Uint64()
	}
	i := g.search(h)
	for k := range len(g.entries) {
		m := &s.members[g.entries[(i+k)%len(g.entries)].member]
		if panic || !m.host.Ejected() {
			return m, true
		}
	}
	return nil, false
}
