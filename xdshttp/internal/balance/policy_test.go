// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		in   resources.LBPolicy
		want PolicyConfig
		note string
	}{
		{in: rr, want: PolicyConfig{kind: roundRobin, byLocality: true, panicAt: 50}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 3}, want: PolicyConfig{kind: leastRequest, choices: 3}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 100}, want: PolicyConfig{kind: leastRequest, choices: 10}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyLeastRequest}, want: PolicyConfig{kind: leastRequest, choices: 2}},
		// gRPC's cap of 4096 on both sizes; the ring is over the
		// priority even under wrr_locality.
		{in: resources.LBPolicy{Kind: resources.LBPolicyRingHash, WeightedByLocality: true, RingHashMinSize: 1024, RingHashMaxSize: 8 << 20}, want: PolicyConfig{kind: ringHash, ringMin: 1024, ringMax: 4096}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 8000, RingHashMaxSize: 9000}, want: PolicyConfig{kind: ringHash, ringMin: 4096, ringMax: 4096}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 10, RingHashMaxSize: 20}, want: PolicyConfig{kind: ringHash, ringMin: 10, ringMax: 20}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyPickFirst, PickFirstShuffleAddressList: true}, want: PolicyConfig{kind: pickFirst, shuffle: true}},
		{in: resources.LBPolicy{Kind: resources.LBPolicyWeightedRoundRobin, WeightedByLocality: true}, want: PolicyConfig{kind: weightedRoundRobin, byLocality: true}, note: "no ORCA"},
		{in: resources.LBPolicy{Kind: resources.LBPolicyCustom, Custom: &resources.CustomLBPolicy{Name: "my_lb"}}, want: PolicyConfig{kind: weightedRoundRobin}, note: `"my_lb"`},
	} {
		t.Run(tc.in.Kind.String(), func(t *testing.T) {
			got, err := Policy(tc.in)
			if err != nil {
				t.Fatalf("Policy: %v", err)
			}
			c := got.(*PolicyConfig)
			note := c.note
			c.note = ""
			if *c != tc.want {
				t.Errorf("Policy = %+v, want %+v", *c, tc.want)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("Note = %q, want one with %q", note, tc.note)
			}
		})
	}
	if _, err := Policy(resources.LBPolicy{Kind: 99}); !errors.Is(err, dataplane.ErrUnsupported) {
		t.Errorf("Policy of an unknown kind = %v, want ErrUnsupported", err)
	}
}

func TestPolicy_RingHashCapFromEnv(t *testing.T) {
	t.Setenv("GRPC_RING_HASH_CAP", "100")
	got, _ := Policy(resources.LBPolicy{Kind: resources.LBPolicyRingHash, RingHashMinSize: 1024, RingHashMaxSize: 8 << 20})
	if c := got.(*PolicyConfig); c.ringMin != 100 || c.ringMax != 100 {
		t.Errorf("ring sizes = %d, %d, want 100, 100 (GRPC_RING_HASH_CAP)", c.ringMin, c.ringMax)
	}
}

// TestRoundRobin checks that round robin takes the endpoints in turn, and
// skips ejected ones evenly.
func TestRoundRobin(t *testing.T) {
	hs := hosts{}
	c := New(cluster("c", newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 5})), hs.host)
	for addr, k := range counts(t, c, 500, Request{}) {
		if k != 100 {
			t.Errorf("%s picked %d times of 500, want 100", addr, k)
		}
	}
	hs.eject(t, "a-1:80", "a-2:80")
	got := counts(t, c, 300, Request{})
	if len(got) != 3 {
		t.Errorf("picks = %v, want a-0, a-3, a-4", got)
	}
	for addr, k := range got {
		if k != 100 {
			t.Errorf("%s picked %d times of 300, want 100", addr, k)
		}
	}
	// The start is random per set: over many new Clusters, the first
	// pick is not always the same.
	first := map[string]bool{}
	for range 50 {
		c := New(cluster("c", newPriority(t, 0, rr, loc{weight: 1, prefix: "z", n: 5})), hosts{}.host)
		pk, _ := c.Pick(Request{})
		first[pk.Endpoint.Addresses[0]] = true
	}
	if len(first) < 2 {
		t.Errorf("the first pick of 50 Clusters was always %v", first)
	}
}

// TestLeastRequest checks Envoy's and gRFC A48's power of two choices: a
// busy endpoint is picked only when every sample is it.
func TestLeastRequest(t *testing.T) {
	hs := hosts{}
	p := resources.LBPolicy{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 2}
	c := New(cluster("c", newPriority(t, 0, p, loc{weight: 1, prefix: "a", n: 3})), hs.host)
	for range 5 {
		hs["a-0:80"].Begin()
	}
	const n = 30000
	got := counts(t, c, n, Request{})
	// Two samples of 3: both a-0 with probability 1/9.
	if !near(got["a-0:80"], n, 1.0/9, 0.015) {
		t.Errorf("busy a-0 picked %d of %d, want 1/9: %v", got["a-0:80"], n, got)
	}
	for _, a := range []string{"a-1:80", "a-2:80"} {
		if !near(got[a], n, 4.0/9, 0.02) {
			t.Errorf("%s picked %d of %d, want 4/9: %v", a, got[a], n, got)
		}
	}
	// Ejected: never sampled.
	hs.eject(t, "a-1:80")
	got = counts(t, c, 1000, Request{})
	if got["a-1:80"] != 0 {
		t.Errorf("ejected a-1 picked: %v", got)
	}
	for range 5 {
		hs["a-0:80"].End()
	}
	if f := hs["a-0:80"].InFlight(); f != 0 {
		t.Errorf("InFlight = %d after 5 Begin and 5 End", f)
	}
}

// TestPickFirst checks pick_first: the first endpoint in order not
// ejected, or a shuffled order (gRFC A62).
func TestPickFirst(t *testing.T) {
	hs := hosts{}
	pf := resources.LBPolicy{Kind: resources.LBPolicyPickFirst}
	c := New(cluster("c", newPriority(t, 0, pf, loc{weight: 1, prefix: "a", n: 2}, loc{weight: 1, prefix: "b", n: 2})), hs.host)
	if got := counts(t, c, 10, Request{}); got["a-0:80"] != 10 {
		t.Errorf("picks = %v, want a-0 only", got)
	}
	hs.eject(t, "a-0:80")
	if got := counts(t, c, 10, Request{}); got["a-1:80"] != 10 {
		t.Errorf("picks = %v, want a-1 only", got)
	}
	pf.PickFirstShuffleAddressList = true
	first := map[string]bool{}
	for range 50 {
		c := New(cluster("c", newPriority(t, 0, pf, loc{weight: 1, prefix: "z", n: 4})), hosts{}.host)
		got := counts(t, c, 5, Request{})
		if len(got) != 1 {
			t.Fatalf("shuffled pick_first picked %v, want one endpoint", got)
		}
		for a := range got {
			first[a] = true
		}
	}
	if len(first) < 2 {
		t.Errorf("shuffle_address_list: 50 Clusters always picked %v", first)
	}
}

// TestWeightedRoundRobin checks weighted round robin by endpoint weight
// (weighted_round_robin and custom policies): each endpoint's share of
// consecutive picks within a few picks (the Weyl sequence's discrepancy),
// interleaved, and over the endpoints not ejected.
func TestWeightedRoundRobin(t *testing.T) {
	hs := hosts{}
	p := resources.LBPolicy{Kind: resources.LBPolicyWeightedRoundRobin, WeightedByLocality: true}
	c := New(cluster("c", newPriority(t, 0, p, loc{weight: 1, prefix: "a", n: 3, weights: []uint32{1, 2, 3}})), hs.host)
	got := counts(t, c, 6000, Request{})
	for i, want := range []int{1000, 2000, 3000} {
		if a := fmt.Sprintf("a-%d:80", i); got[a] < want-3 || got[a] > want+3 {
			t.Errorf("%s picked %d times of 6000, want %d ± 3", a, got[a], want)
		}
	}
	// Interleaved: a-2 (weight 3 of 6) never picked 3 times running.
	run, prev := 0, ""
	for range 600 {
		pk, _ := c.Pick(Request{})
		if a := pk.Endpoint.Addresses[0]; a == prev {
			run++
			if run >= 3 {
				t.Fatalf("%s picked %d times running", a, run)
			}
		} else {
			run, prev = 1, a
		}
	}
	hs.eject(t, "a-2:80")
	got = counts(t, c, 3000, Request{})
	if got["a-2:80"] != 0 || got["a-0:80"] < 997 || got["a-0:80"] > 1003 {
		t.Errorf("with a-2 ejected, picks = %v, want a-0 1000 ± 3, a-1 2000 ± 3", got)
	}

	// Custom: the same, over the priority by PriorityShare without
	// wrr_locality.
	custom := resources.LBPolicy{Kind: resources.LBPolicyCustom, Custom: &resources.CustomLBPolicy{Name: "x"}}
	c = New(cluster("c", newPriority(t, 0, custom, loc{weight: 1, prefix: "b", n: 1}, loc{weight: 3, prefix: "c", n: 1})), hs.host)
	got = counts(t, c, 4000, Request{})
	if !near(got["b-0:80"], 4000, 0.25, 0.001) {
		t.Errorf("custom policy picks = %v, want b-0 a quarter", got)
	}
}

// TestRace picks from many goroutines while hosts are ejected and
// unejected (go test -race).
func TestRace(t *testing.T) {
	for _, p := range []resources.LBPolicy{
		rr, rrFlat,
		{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 2, HealthyPanicThreshold: 50},
		{Kind: resources.LBPolicyRingHash, RingHashMinSize: 64, RingHashMaxSize: 64},
		{Kind: resources.LBPolicyPickFirst},
		{Kind: resources.LBPolicyWeightedRoundRobin, WeightedByLocality: true},
	} {
		t.Run(p.Kind.String(), func(t *testing.T) {
			hs := hosts{}
			c := New(cluster("c",
				newPriority(t, 0, p, loc{weight: 1, prefix: "a", n: 4}, loc{weight: 2, prefix: "b", n: 4}),
				newPriority(t, 1, p, loc{weight: 1, prefix: "c", n: 2}),
			), hs.host)
			addrs := make([]string, 0, len(hs))
			for a := range hs {
				addrs = append(addrs, a)
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					hs[addrs[i%len(addrs)]].SetEjected(i%3 != 0)
				}
			})
			var pickers sync.WaitGroup
			for g := range 4 {
				pickers.Go(func() {
					for i := range 2000 {
						pk, err := c.Pick(Request{Hash: uint64(g*i) * 0x9e3779b97f4a7c15, HasHash: i%2 == 0})
						if err != nil {
							if !errors.Is(err, ErrNoHealthyEndpoint) {
								t.Errorf("Pick: %v", err)
							}
							continue
						}
						pk.Host.Begin()
						pk.Host.End()
					}
				})
			}
			pickers.Wait()
			close(stop)
			wg.Wait()
		})
	}
}

// TestPick_NoAllocation checks that Pick allocates nothing once the state
// of the ejections is computed.
func TestPick_NoAllocation(t *testing.T) {
	for _, p := range []resources.LBPolicy{
		rr,
		{Kind: resources.LBPolicyLeastRequest, LeastRequestChoiceCount: 2},
		{Kind: resources.LBPolicyRingHash},
		{Kind: resources.LBPolicyWeightedRoundRobin},
	} {
		hs := hosts{}
		c := New(cluster("c",
			newPriority(t, 0, p, loc{weight: 1, prefix: "a", n: 3}, loc{weight: 1, prefix: "b", n: 3}),
			newPriority(t, 1, p, loc{weight: 1, prefix: "c", n: 3}),
		), hs.host)
		hs.eject(t, "a-0:80", "a-1:80", "a-2:80", "b-0:80") // two priorities with load
		c.Pick(Request{})
		if a := testing.AllocsPerRun(1000, func() { c.Pick(Request{Hash: 42, HasHash: true}) }); a != 0 {
			t.Errorf("%v: Pick allocates %v times", p.Kind, a)
		}
	}
}
