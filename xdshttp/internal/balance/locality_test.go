// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"strings"
	"testing"
)

// TestLocality_Weights checks the pick of a locality under wrr_locality
// by weight times availability (Envoy's locality weighted load balancing,
// https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/locality_weight).
func TestLocality_Weights(t *testing.T) {
	byZone := func(got map[string]int) (a, b int) {
		for addr, k := range got {
			if strings.HasPrefix(addr, "a-") {
				a += k
			} else {
				b += k
			}
		}
		return a, b
	}
	hs := hosts{}
	c := New(cluster("c", newPriority(t, 0, rr,
		loc{weight: 1, prefix: "a", n: 4},
		loc{weight: 3, prefix: "b", n: 10},
	)), hs.host)
	const n = 40000
	a, _ := byZone(counts(t, c, n, Request{}))
	if !near(a, n, 0.25, 0.015) {
		t.Errorf("locality a (weight 1 of 4) got %d of %d", a, n)
	}

	// 6 of b's 10 ejected: availability 4/10 × 1.4 = 0.56, effective
	// weight 3 × 0.56 = 1.68 against a's 1. The priority as a whole (8 of
	// 14) is not in panic.
	for _, addr := range []string{"b-0:80", "b-1:80", "b-2:80", "b-3:80", "b-4:80", "b-5:80"} {
		hs.eject(t, addr)
	}
	got := counts(t, c, n, Request{})
	a, _ = byZone(got)
	if want := 1 / 2.68; !near(a, n, want, 0.015) {
		t.Errorf("locality a got %d of %d, want %.3f", a, n, want)
	}
	for addr := range got {
		if hs[addr].Ejected() {
			t.Errorf("ejected %s picked", addr)
		}
	}

	// 2 of b's 10 healthy enough (8 of 10 × 1.4 ≥ 1): full weight.
	for _, addr := range []string{"b-2:80", "b-3:80", "b-4:80", "b-5:80"} {
		hs[addr].SetEjected(false)
	}
	if a, _ = byZone(counts(t, c, n, Request{})); !near(a, n, 0.25, 0.015) {
		t.Errorf("locality a got %d of %d after b recovered to 80 %%", a, n)
	}
}

// TestLocality_AllEjected checks that a locality with every host ejected
// gets no request.
func TestLocality_AllEjected(t *testing.T) {
	hs := hosts{}
	c := New(cluster("c", newPriority(t, 0, rr,
		loc{weight: 100, prefix: "a", n: 1},
		loc{weight: 1, prefix: "b", n: 3},
	)), hs.host)
	hs.eject(t, "a-0:80")
	if got := counts(t, c, 1000, Request{}); got["a-0:80"] != 0 || len(got) != 3 {
		t.Errorf("picks = %v, want b's 3 hosts only", got)
	}
}

// TestLocality_Flat checks that without wrr_locality the endpoints of a
// priority are balanced together, whatever the locality weights.
func TestLocality_Flat(t *testing.T) {
	hs := hosts{}
	c := New(cluster("c", newPriority(t, 0, rrFlat,
		loc{weight: 100, prefix: "a", n: 1},
		loc{weight: 1, prefix: "b", n: 3},
	)), hs.host)
	got := counts(t, c, 400, Request{})
	for addr, k := range got {
		if k != 100 {
			t.Errorf("%s picked %d times of 400, want 100 (round robin over 4): %v", addr, k, got)
		}
	}
}
