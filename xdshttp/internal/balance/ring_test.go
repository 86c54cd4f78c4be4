// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"fmt"
	"math"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

// ringPriority returns a ring_hash priority of one locality whose
// endpoints have the given keys (addresses, or hash keys when hashKeys)
// and PriorityShares.
func ringPriority(t *testing.T, minSize, maxSize uint64, hashKeys bool, keys []string, shares []uint32) *dataplane.Priority {
	t.Helper()
	p := resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: minSize, RingHashMaxSize: maxSize}
	cfg, err := Policy(p)
	if err != nil {
		t.Fatal(err)
	}
	l := dataplane.Locality{Weight: 1}
	for i, k := range keys {
		e := dataplane.Endpoint{Addresses: []string{k}, Weight: 1, PriorityShare: shares[i]}
		if hashKeys {
			e.Addresses, e.HashKey = []string{fmt.Sprintf("10.1.1.%d:80", i)}, k
		}
		l.Endpoints = append(l.Endpoints, e)
	}
	return &dataplane.Priority{Leaf: "leaf", Policy: p, PolicyConfig: cfg, Localities: []dataplane.Locality{l}}
}

// TestRingHash_AsGRPC checks that the ring is the one grpc-go builds
// (balancer/ringhash, newRing) for the same endpoints, weights and sizes:
// ring sizes, entries per endpoint, and the endpoint of a few hashes. The
// wanted values were computed by a transcription of grpc-go v1.85.0's
// newRing and ring.pick (not kept: grpc's ring is internal to grpc).
func TestRingHash_AsGRPC(t *testing.T) {
	type hashPick struct {
		hash uint64
		want string
	}
	key := func(s string) uint64 { return xxhash.Sum64String(s) }
	for _, tc := range []struct {
		name     string
		keys     []string
		shares   []uint32
		hashKeys bool
		min, max uint64
		size     int
		entries  []int // per endpoint, in the order of keys
		picks    []hashPick
	}{
		{
			name: "equal", keys: []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80"},
			shares: []uint32{1 << 29, 1 << 29, 1 << 29, 1 << 29}, min: 1024, max: 8 << 20,
			size: 1024, entries: []int{256, 256, 256, 256},
			picks: []hashPick{
				{key(""), "10.0.0.2:80"}, {key("alice"), "10.0.0.2:80"}, {key("bob"), "10.0.0.4:80"},
				{key("carol"), "10.0.0.4:80"}, {key("dave"), "10.0.0.2:80"}, {key("eve"), "10.0.0.1:80"},
				{key("x-user-42"), "10.0.0.4:80"}, {0, "10.0.0.3:80"}, {1 << 63, "10.0.0.1:80"},
				{math.MaxUint64, "10.0.0.3:80"}, {0x674c93dec902e6, "10.0.0.3:80"}, {0x674c93dec902e7, "10.0.0.2:80"},
			},
		},
		{
			name: "weighted", keys: []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
			shares: []uint32{429496730, 429496730, 858993459}, min: 1024, max: 4096,
			size: 1028, entries: []int{257, 257, 514},
			picks: []hashPick{
				{key(""), "10.0.0.2:80"}, {key("alice"), "10.0.0.2:80"}, {key("bob"), "10.0.0.3:80"},
				{key("carol"), "10.0.0.1:80"}, {key("dave"), "10.0.0.2:80"}, {key("eve"), "10.0.0.1:80"},
				{key("x-user-42"), "10.0.0.1:80"}, {0, "10.0.0.3:80"}, {1 << 63, "10.0.0.1:80"},
				{math.MaxUint64, "10.0.0.3:80"}, {0x674c93dec902e7, "10.0.0.3:80"},
			},
		},
		{
			name: "hash keys", keys: []string{"a", "b"}, hashKeys: true,
			shares: []uint32{1 << 30, 1 << 30}, min: 10, max: 100,
			size: 10, entries: []int{5, 5},
			picks: []hashPick{
				{key("alice"), "a"}, {key("x-user-42"), "a"}, {0, "b"}, {1 << 63, "a"},
				{math.MaxUint64, "b"}, {0x1c30c0d6b4713940, "b"}, {0x1c30c0d6b4713941, "a"},
			},
		},
		{
			name: "max size", keys: []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"},
			shares: []uint32{1, 2, 3}, min: 1, max: 7,
			size: 6, entries: []int{1, 2, 3},
			picks: []hashPick{
				{key("dave"), "10.0.0.2:80"}, {key("alice"), "10.0.0.3:80"},
				{0x1843fe2bfd88cc4b, "10.0.0.3:80"}, {0x1843fe2bfd88cc4c, "10.0.0.2:80"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(cluster("c", ringPriority(t, tc.min, tc.max, tc.hashKeys, tc.keys, tc.shares)), hosts{}.host)
			s := &c.prios[0].sets[0]
			if got := len(s.ring.entries); got != tc.size {
				t.Errorf("ring size = %d, want %d", got, tc.size)
			}
			per := make([]int, len(tc.keys))
			for _, e := range s.ring.entries {
				per[e.member]++
			}
			if fmt.Sprint(per) != fmt.Sprint(tc.entries) {
				t.Errorf("entries per endpoint = %v, want %v", per, tc.entries)
			}
			for _, hp := range tc.picks {
				pk, err := c.Pick(Request{Hash: hp.hash, HasHash: true})
				if err != nil {
					t.Fatal(err)
				}
				got := pk.Endpoint.Addresses[0]
				if tc.hashKeys {
					got = pk.Endpoint.HashKey
				}
				if got != hp.want {
					t.Errorf("hash %#x picks %s, want %s", hp.hash, got, hp.want)
				}
			}
		})
	}
}

// TestRingHash_Ejected checks that a hash whose endpoint is ejected goes to
// the endpoint of the next entries, and that a request without hash is
// spread over the ring.
func TestRingHash_Ejected(t *testing.T) {
	hs := hosts{}
	p := ringPriority(t, 1024, 4096, false, []string{"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "10.0.0.4:80"}, []uint32{1 << 29, 1 << 29, 1 << 29, 1 << 29})
	p.Policy.HealthyPanicThreshold = 0
	p.PolicyConfig.(*PolicyConfig).panicAt = 0
	c := New(cluster("c", p), hs.host)
	r := Request{Hash: xxhash.Sum64String("alice"), HasHash: true} // 10.0.0.2
	hs.eject(t, "10.0.0.2:80")
	pk, err := c.Pick(r)
	if err != nil {
		t.Fatal(err)
	}
	g := c.prios[0].sets[0].ring
	i := g.search(r.Hash)
	want := ""
	for k := range g.entries {
		m := c.prios[0].sets[0].members[g.entries[(i+k)%len(g.entries)].member]
		if a := m.ep.Addresses[0]; a != "10.0.0.2:80" {
			want = a
			break
		}
	}
	if got := pk.Endpoint.Addresses[0]; got != want || got == "10.0.0.2:80" {
		t.Errorf("with 10.0.0.2 ejected, alice picks %s, want %s (the next entry's)", got, want)
	}
	// The same hash, again: the same endpoint.
	if pk2, _ := c.Pick(r); pk2.Endpoint != pk.Endpoint {
		t.Errorf("the same hash picked %s then %s", pk.Endpoint.Addresses[0], pk2.Endpoint.Addresses[0])
	}
	got := counts(t, c, 3000, Request{})
	if len(got) != 3 || got["10.0.0.2:80"] != 0 {
		t.Errorf("random hashes picked %v, want the 3 hosts not ejected", got)
	}
	for a, k := range got {
		if !near(k, 3000, 1.0/3, 0.05) {
			t.Errorf("%s got %d of 3000 random hashes", a, k)
		}
	}
}
