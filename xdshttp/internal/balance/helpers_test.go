// SPDX-License-Identifier: Apache-2.0

package balance

import (
	"fmt"
	"testing"

	"github.com/proxyless/xds/internal/dataplane"
	"github.com/proxyless/xds/resources"
)

// hosts is a transport's table of Hosts, by endpoint key.
type hosts map[string]*Host

func (hs hosts) host(e *dataplane.Endpoint) *Host {
	h := hs[e.Key()]
	if h == nil {
		h = new(Host)
		hs[e.Key()] = h
	}
	return h
}

// eject ejects the hosts of addrs.
func (hs hosts) eject(t *testing.T, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		h := hs[a]
		if h == nil {
			t.Fatalf("no host %s", a)
		}
		h.SetEjected(true)
	}
}

// loc is a locality of a test priority: its weight and its endpoints'
// weights (1 each when nil), n endpoints named "<prefix>-<i>:80".
type loc struct {
	weight  uint32
	prefix  string
	n       int
	weights []uint32
}

// newPriority returns a priority of localities with policy p (through
// Policy, as dataplane.Build would), with the endpoints' PriorityShare
// computed as dataplane does.
func newPriority(t testing.TB, num uint32, p resources.LBPolicy, locs ...loc) *dataplane.Priority {
	t.Helper()
	cfg, err := Policy(p)
	if err != nil {
		t.Fatalf("Policy(%+v): %v", p, err)
	}
	dp := &dataplane.Priority{Leaf: "leaf", Priority: num, Policy: p, PolicyConfig: cfg}
	var locSum uint64
	for _, l := range locs {
		locSum += uint64(l.weight)
	}
	for _, l := range locs {
		dl := dataplane.Locality{ID: resources.LocalityID{Zone: l.prefix}, Weight: l.weight}
		var sum uint64
		for i := range l.n {
			sum += uint64(weightAt(l, i))
		}
		for i := range l.n {
			w := weightAt(l, i)
			share := (uint64(w) << 31 / sum) * (uint64(l.weight) << 31 / locSum) >> 31
			dl.Endpoints = append(dl.Endpoints, dataplane.Endpoint{
				Addresses: []string{fmt.Sprintf("%s-%d:80", l.prefix, i)}, Weight: w,
				PriorityShare: uint32(max(1, share)), HealthStatus: resources.HealthStatusHealthy,
			})
		}
		dp.Localities = append(dp.Localities, dl)
	}
	return dp
}

func weightAt(l loc, i int) uint32 {
	if l.weights == nil {
		return 1
	}
	return l.weights[i]
}

func cluster(name string, prios ...*dataplane.Priority) *dataplane.Cluster {
	return &dataplane.Cluster{Name: name, Priorities: prios}
}

var (
	rr     = resources.LBPolicy{Kind: resources.LBPolicyRoundRobin, WeightedByLocality: true, HealthyPanicThreshold: 50}
	rrFlat = resources.LBPolicy{Kind: resources.LBPolicyRoundRobin}
)

// with returns p with a panic threshold.
func withPanic(p resources.LBPolicy, threshold uint8) resources.LBPolicy {
	p.HealthyPanicThreshold = threshold
	return p
}

// counts picks n times and counts the picked endpoints by address.
func counts(t testing.TB, c *Cluster, n int, r Request) map[string]int {
	t.Helper()
	got := make(map[string]int)
	for range n {
		pk, err := c.Pick(r)
		if err != nil {
			t.Fatalf("Pick: %v", err)
		}
		got[pk.Endpoint.Addresses[0]]++
	}
	return got
}

// near reports whether got is within tol (a fraction of n) of want·n.
func near(got, n int, want, tol float64) bool {
	f := float64(got) / float64(n)
	return f >= want-tol && f <= want+tol
}
