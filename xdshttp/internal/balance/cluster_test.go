// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/proxyless/xds/internal/dataplane"
)

// TestPriorityLoad_EnvoyTables checks the priority loads against the
// tables of Envoy's "Priority levels" documentation
// (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/priority),
// each priority of 100 endpoints with the given percent not ejected, panic
// disabled (the tables leave panic aside).
func TestPriorityLoad_EnvoyTables(t *testing.T) {
	for _, tc := range []struct {
		healthy []int
		want    []uint32
	}{
		// Two priorities, P1 healthy.
		{[]int{100, 100}, []uint32{100, 0}},
		{[]int{72, 100}, []uint32{100, 0}},
		{[]int{71, 100}, []uint32{99, 1}},
		{[]int{50, 100}, []uint32{70, 30}},
		{[]int{25, 100}, []uint32{35, 65}},
		{[]int{0, 100}, []uint32{0, 100}},
		// Normalized total health.
		{[]int{72, 72}, []uint32{100, 0}},
		{[]int{71, 71}, []uint32{99, 1}},
		{[]int{50, 50}, []uint32{70, 30}},
		{[]int{25, 25}, []uint32{50, 50}},
		// Three priorities.
		{[]int{100, 100, 100}, []uint32{100, 0, 0}},
		{[]int{71, 71, 100}, []uint32{99, 1, 0}},
		{[]int{25, 100, 100}, []uint32{35, 65, 0}},
		{[]int{25, 25, 100}, []uint32{35, 35, 30}},
		// The documentation's table gives 36/36/28: health 35/35/28
		// normalized by 98 rounds down to 35/35/28, and Envoy's code
		// (recalculatePerPriorityState), which this package follows,
		// gives the 2 left over to the first priority with health.
		{[]int{25, 25, 20}, []uint32{37, 35, 28}},
	} {
		t.Run(fmt.Sprint(tc.healthy), func(t *testing.T) {
			hs := hosts{}
			var prios []*dataplane.Priority
			for i := range tc.healthy {
				prios = append(prios, newPriority(t, uint32(i), withPanic(rr, 0), loc{weight: 1, prefix: fmt.Sprintf("p%d", i), n: 100}))
			}
			c := New(cluster("c", prios...), hs.host)
			for i, h := range tc.healthy {
				for k := h; k < 100; k++ {
					hs.eject(t, fmt.Sprintf("p%d-%d:80", i, k))
				}
			}
			st := c.current()
			var got []uint32
			for _, ps := range st.prios {
				got = append(got, ps.load)
				if ps.panic {
					t.Errorf("a priority is in panic with the threshold 0")
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("loads = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPriorityLoad_Picks checks that picks follow the loads and never
// reach an ejected host: P0 50 % healthy takes 70 % of the requests.
func TestPriorityLoad_Picks(t *testing.T) {
	hs := hosts{}
	c := New(cluster("c",
		newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 4}),
		newPriority(t, 1, withPanic(rr, 0), loc{weight: 1, prefix: "b", n: 2}),
	), hs.host)
	hs.eject(t, "a-0:80", "a-1:80")
	const n = 20000
	got := counts(t, c, n, Request{})
	if got["a-0:80"]+got["a-1:80"] != 0 {
		t.Errorf("ejected hosts picked: %v", got)
	}
	if p0 := got["a-2:80"] + got["a-3:80"]; !near(p0, n, 0.70, 0.02) {
		t.Errorf("P0 got %d of %d picks, want 70 %%: %v", p0, n, got)
	}
	// Unejected: P0 takes everything again, at the next Pick.
	hs["a-0:80"].SetEjected(false)
	hs["a-1:80"].SetEjected(false)
	got = counts(t, c, 1000, Request{})
	if got["b-0:80"]+got["b-1:80"] != 0 {
		t.Errorf("P1 picked with P0 healthy: %v", got)
	}
}

// TestPanic checks Envoy's panic threshold
// (https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/upstream/load_balancing/panic_threshold):
// judged on the healthy share itself, only when the priorities together are
// not healthy enough, ejected hosts picked in panic; total panic by number
// of hosts; no panic with a threshold of 0.
func TestPanic(t *testing.T) {
	t.Run("single priority below threshold", func(t *testing.T) {
		hs := hosts{}
		// 4 of 10 healthy: 40 % < 50 %, health 56 % < 100 %: panic.
		c := New(cluster("c", newPriority(t, 0, rr, loc{weight: 1, prefix: "a", n: 10})), hs.host)
		for i := range 6 {
			hs.eject(t, fmt.Sprintf("a-%d:80", i))
		}
		got := counts(t, c, 1000, Request{})
		if len(got) != 10 {
			t.Errorf("in panic, picked %d hosts, want all 10: %v", len(got), got)
		}
	})
	t.Run("at threshold", func(t *testing.T) {
		hs := hosts{}
		// 5 of 10 healthy: 50 % is not below 50 %: no panic, though
		// the 1.4 factor would put it at 70 %.
		c := New(cluster("c", newPriority(t, 0, rr, loc{weight: 1, prefix: "a", n: 10})), hs.host)
		for i := range 5 {
			hs.eject(t, fmt.Sprintf("a-%d:80", i))
		}
		for a := range counts(t, c, 1000, Request{}) {
			if hs[a].Ejected() {
				t.Fatalf("ejected %s picked out of panic", a)
			}
		}
	})
	t.Run("threshold 0", func(t *testing.T) {
		hs := hosts{}
		c := New(cluster("c", newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 10})), hs.host)
		for i := range 9 {
			hs.eject(t, fmt.Sprintf("a-%d:80", i))
		}
		if got := counts(t, c, 100, Request{}); got["a-9:80"] != 100 {
			t.Errorf("picks = %v, want a-9 only", got)
		}
		hs.eject(t, "a-9:80")
		_, err := c.Pick(Request{})
		if !errors.Is(err, ErrNoHealthyEndpoint) || !strings.Contains(err.Error(), `"c"`) {
			t.Errorf("Pick with every host ejected = %v, want ErrNoHealthyEndpoint naming the cluster", err)
		}
	})
	t.Run("lower priority healthy", func(t *testing.T) {
		hs := hosts{}
		// P0 at 40 % (health 56) and P1 healthy: total 100, no panic;
		// P0 takes 56 % on its healthy hosts.
		c := New(cluster("c",
			newPriority(t, 0, rr, loc{weight: 1, prefix: "a", n: 10}),
			newPriority(t, 1, rr, loc{weight: 1, prefix: "b", n: 10}),
		), hs.host)
		for i := range 6 {
			hs.eject(t, fmt.Sprintf("a-%d:80", i))
		}
		const n = 20000
		got := counts(t, c, n, Request{})
		p0 := 0
		for a, k := range got {
			if hs[a].Ejected() {
				t.Fatalf("ejected %s picked out of panic", a)
			}
			if strings.HasPrefix(a, "a-") {
				p0 += k
			}
		}
		if !near(p0, n, 0.56, 0.02) {
			t.Errorf("P0 got %d of %d, want 56 %%", p0, n)
		}
	})
	t.Run("total panic", func(t *testing.T) {
		hs := hosts{}
		// Every host ejected: every priority in panic, loads by number
		// of hosts (Envoy's total panic): 1/4 and 3/4.
		c := New(cluster("c",
			newPriority(t, 0, rr, loc{weight: 1, prefix: "a", n: 2}),
			newPriority(t, 1, rr, loc{weight: 1, prefix: "b", n: 6}),
		), hs.host)
		for a := range hs {
			hs.eject(t, a)
		}
		st := c.current()
		if st.prios[0].load != 25 || st.prios[1].load != 75 {
			t.Errorf("loads = %d/%d, want 25/75", st.prios[0].load, st.prios[1].load)
		}
		got := counts(t, c, 4000, Request{})
		if len(got) != 8 {
			t.Errorf("picked %v, want every host", got)
		}
	})
}

// TestClusterErr checks that a cluster's error is returned as it is.
func TestClusterErr(t *testing.T) {
	want := fmt.Errorf("cluster %q: %w", "c", dataplane.ErrNoUsableEndpoints)
	c := New(&dataplane.Cluster{Name: "c", Err: want}, hosts{}.host)
	if _, err := c.Pick(Request{}); err != want {
		t.Errorf("Pick = %v, want %v", err, want)
	}
	c = New(&dataplane.Cluster{Name: "empty"}, hosts{}.host)
	if _, err := c.Pick(Request{}); !errors.Is(err, ErrNoHealthyEndpoint) {
		t.Errorf("Pick of a cluster without priorities = %v, want ErrNoHealthyEndpoint", err)
	}
}

// TestHostsKept checks that a new Cluster of the same endpoints sees the
// ejections of the Hosts the transport kept.
func TestHostsKept(t *testing.T) {
	hs := hosts{}
	p := newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 3})
	New(cluster("c", p), hs.host)
	hs.eject(t, "a-0:80")
	c := New(cluster("c", newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 3})), hs.host)
	if got := counts(t, c, 300, Request{}); got["a-0:80"] != 0 {
		t.Errorf("picks = %v, want a-0 skipped", got)
	}
}

// TestPick_StaleState checks the picks made with the state of older
// ejections (a Pick racing SetEjected): a host ejected since is not
// picked, the next host of the set is; a priority whose every host is
// ejected since passes the request to the next priority with load.
func TestPick_StaleState(t *testing.T) {
	hs := hosts{}
	c := New(cluster("c",
		newPriority(t, 0, withPanic(rr, 0), loc{weight: 1, prefix: "a", n: 3}),
		newPriority(t, 1, withPanic(rr, 0), loc{weight: 1, prefix: "b", n: 3}),
		newPriority(t, 2, withPanic(rr, 0), loc{weight: 1, prefix: "c", n: 3}),
	), hs.host)
	hs.eject(t, "a-0:80", "a-1:80", "b-0:80", "b-1:80")
	st := c.current() // P0 and P1 at health 46 each: loads 46/46/8
	hs.eject(t, "a-2:80", "b-2:80")
	for range 100 {
		pk, ok := c.pick(st, Request{})
		if !ok {
			t.Fatal("no pick with the stale state")
		}
		if a := pk.Endpoint.Addresses[0]; a[0] != 'c' {
			t.Fatalf("picked %s, ejected since the state", a)
		}
	}
	// The set alone: its next host that is not ejected.
	hs2 := hosts{}
	c = New(cluster("c", newPriority(t, 0, withPanic(rrFlat, 0), loc{weight: 1, prefix: "a", n: 3})), hs2.host)
	st = c.current()
	hs2.eject(t, "a-1:80")
	for range 30 {
		m, ok := c.prios[0].sets[0].pick(&st.sets[0], false, Request{})
		if !ok || m.ep.Addresses[0] == "a-1:80" {
			t.Fatalf("set pick with a stale state = %v, %v", m, ok)
		}
	}
}
