// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"testing"

	"github.com/proxyless/xds/resources"
)

// benchPick picks in parallel from a cluster of two priorities (the
// first healthy) of 3 localities of 10 endpoints each.
func benchPick(b *testing.B, p resources.LBPolicy, r Request) {
	hs := hosts{}
	c := New(cluster("c",
		newPriority(b, 0, p, loc{weight: 1, prefix: "a", n: 10}, loc{weight: 2, prefix: "b", n: 10}, loc{weight: 3, prefix: "c", n: 10}),
		newPriority(b, 1, p, loc{weight: 1, prefix: "d", n: 10}),
	), hs.host)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pk, err := c.Pick(r)
			if err != nil {
				b.Fatal(err)
			}
			pk.Host.Begin()
			pk.Host.End()
		}
	})
}

func BenchmarkPick_RoundRobin(b *testing.B) { benchPick(b, rr, Request{}) }

func BenchmarkPick_LeastRequest(b *testing.B) {
	benchPick(b, resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 2, HealthyPanicThreshold: 50}, Request{})
}

func BenchmarkPick_RingHash(b *testing.B) {
	benchPick(b, resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 4096, HealthyPanicThreshold: 50}, Request{Hash: 0x1234567890abcdef, HasHash: true})
}

func BenchmarkPick_WeightedRoundRobin(b *testing.B) {
	benchPick(b, resources.LBPolicy{Kind: resources.LBPolicyWeightedRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}, Request{})
}
