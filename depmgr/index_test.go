// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestDepMgr_NameIndex checks the node index against a map over random
// additions and deletions, growing to 5,000 nodes and shrinking back to
// none: every node is found, no other name is, and the table stays at
// most 3/4 and (once it had 8 slots) at least 1/16 full.
func TestDepMgr_NameIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newNameIndex[*endpointsNode]()
	want := make(map[string]*endpointsNode)
	check := func(step string) {
		t.Helper()
		if x.len() != len(want) {
			t.Fatalf("%s: len %d, want %d", step, x.len(), len(want))
		}
		if len(x.slots) > 0 && (x.n*4 > len(x.slots)*3 || (len(x.slots) > minIndexSlots && x.n*16 < len(x.slots))) {
			t.Fatalf("%s: %d nodes in %d slots", step, x.n, len(x.slots))
		}
		got := make(map[string]*endpointsNode)
		for n := range x.all() {
			got[n.name] = n
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s: all() has %d nodes, want %d", step, len(got), len(want))
		}
		for name, n := range want {
			if x.get(name) != n {
				t.Fatalf("%s: get(%q) = %p, want %p", step, name, x.get(name), n)
			}
		}
	}
	name := func() string { return fmt.Sprint("eds-", rng.IntN(8000)) }
	for step := range 40_000 {
		// Grow for the first half, shrink for the second.
		if add := rng.IntN(4) != 0; add == (step < 20_000) {
			if nm := name(); want[nm] == nil {
				n := &endpointsNode{name: nm}
				x.add(n)
				want[nm] = n
			}
		} else {
			nm := name()
			x.delete(nm)
			delete(want, nm)
			if x.get(nm) != nil {
				t.Fatalf("step %d: %q found after its deletion", step, nm)
			}
		}
		if step%1000 == 0 {
			check(fmt.Sprint("step ", step))
		}
	}
	for nm := range want {
		x.delete(nm)
		delete(want, nm)
	}
	check("the end")
	if len(x.slots) != minIndexSlots {
		t.Errorf("empty index has %d slots, want %d", len(x.slots), minIndexSlots)
	}
}
