// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/proxyless/xds/resources"
)

// odTestGroup returns a detector of n endpoints, "e0"…, under cfg.
func odTestGroup(n int, cfg *resources.OutlierDetection) (*OutlierDetector, []*OutlierEndpoint) {
	d := NewOutlierDetector(cfg)
	var eps []Endpoint
	for i := range n {
		eps = append(eps, Endpoint{Addresses: []string{fmt.Sprintf("e%d", i)}})
	}
	d.SetEndpoints(eps)
	out := make([]*OutlierEndpoint, n)
	for i := range n {
		out[i] = d.Endpoint(fmt.Sprintf("e%d", i))
	}
	return d, out
}

// results records ok successes and failed failures for e.
func results(e *OutlierEndpoint, ok, failed int) {
	for range ok {
		e.Record(nil)
	}
	for range failed {
		e.Record(errors.New("failed"))
	}
}

// ejected returns which of eps are ejected.
func ejected(eps []*OutlierEndpoint) []bool {
	out := make([]bool, len(eps))
	for i, e := range eps {
		out[i] = e.Ejected()
	}
	return out
}

// TestOutlierDetection_Sweep checks the algorithms of gRFC A50 interval by
// interval: failure percentage and success rate ejection with their
// request volume and minimum hosts, max_ejection_percent, the ejection
// time growing with each ejection (base × ejections, at most
// max(base, max_ejection_time)), its decay by one per interval without
// ejection, and unejection; the changes name the endpoints.
func TestOutlierDetection_Sweep(t *testing.T) {
	t0 := time.Unix(1000, 0)
	fp := &resources.OutlierDetection{
		Interval: time.Second, BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second, MaxEjectionPercent: 100,
		FailurePercentage: &resources.FailurePercentageEjection{Threshold: 50, EnforcementPercentage: 100, MinimumHosts: 3, RequestVolume: 10},
	}
	g, eps := odTestGroup(3, fp)

	// Interval 1: e0 fails 60 %: ejected.
	results(eps[0], 4, 6)
	results(eps[1], 10, 0)
	results(eps[2], 10, 0)
	changes := g.Sweep(t0.Add(time.Second), nil)
	if got := ejected(eps); !got[0] || got[1] || got[2] || g.ejected != 1 {
		t.Fatalf("after interval 1: ejected %v (%d); want e0 only", got, g.ejected)
	}
	if len(changes) != 1 || !changes[0].Eject || changes[0].Endpoint != eps[0] {
		t.Fatalf("changes = %+v; want e0 ejected", changes)
	}
	// Too few RPCs, or too few endpoints with enough: nothing happens.
	results(eps[1], 1, 8)
	if g.Sweep(t0.Add(2*time.Second), nil); ejected(eps)[1] {
		t.Fatalf("e1 ejected with 9 RPCs; the request volume is 10")
	}
	// 10 s after the ejection (1 × base): still ejected; then unejected.
	if g.Sweep(t0.Add(11*time.Second), nil); !ejected(eps)[0] {
		t.Fatalf("e0 unejected at the end of its ejection time; want after it")
	}
	changes = g.Sweep(t0.Add(11*time.Second+time.Millisecond), nil)
	if ejected(eps)[0] || len(changes) != 1 || changes[0].Eject || g.ejected != 0 {
		t.Fatalf("e0 not unejected after 10 s: %v, changes %+v", ejected(eps), changes)
	}
	// Ejected again at once: twice the base time (multiplier 2, it was
	// not decayed: the interval that unejected it does not count).
	results(eps[0], 0, 10)
	results(eps[1], 10, 0)
	results(eps[2], 10, 0)
	t1 := t0.Add(12 * time.Second)
	g.Sweep(t1, nil)
	if g.Sweep(t1.Add(15*time.Second), nil); !ejected(eps)[0] {
		t.Fatalf("second ejection ended after 15 s; want 20 s")
	}
	if g.Sweep(t1.Add(20*time.Second+time.Millisecond), nil); ejected(eps)[0] {
		t.Fatalf("second ejection still on after 20 s")
	}
	// Decay: each interval without ejection lowers the multiplier.
	if eps[0].multiplier != 2 {
		t.Fatalf("multiplier = %d; want 2", eps[0].multiplier)
	}
	g.Sweep(t1.Add(21*time.Second), nil)
	if eps[0].multiplier != 1 {
		t.Fatalf("after an interval without ejection, multiplier = %d; want 1", eps[0].multiplier)
	}

	// max_ejection_percent 10 of 3 endpoints: one ejection (0 % ejected
	// before it), never two.
	cfg := *fp
	cfg.MaxEjectionPercent = 10
	g, eps = odTestGroup(3, &cfg)
	results(eps[0], 0, 10)
	results(eps[1], 0, 10)
	results(eps[2], 10, 0)
	g.Sweep(t0, nil)
	if got := ejected(eps); got[0] == got[1] || got[2] {
		t.Fatalf("max_ejection_percent 10: ejected %v; want exactly one of e0, e1", got)
	}

	// The ejection time is capped at max(base, max_ejection_time).
	cfg = *fp
	g, eps = odTestGroup(3, &cfg)
	eps[0].multiplier = 9
	results(eps[0], 0, 10)
	results(eps[1], 10, 0)
	results(eps[2], 10, 0)
	g.Sweep(t0, nil)
	if g.Sweep(t0.Add(25*time.Second+time.Millisecond), nil); ejected(eps)[0] {
		t.Fatalf("ejected 10 times: still ejected after max_ejection_time 25 s")
	}

	// Success rate: mean 0.9, deviation 0.2, factor 1.9: below 0.52 is
	// ejected.
	sr := &resources.OutlierDetection{
		Interval: time.Second, BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second, MaxEjectionPercent: 100,
		SuccessRate: &resources.SuccessRateEjection{StdevFactor: 1900, EnforcementPercentage: 100, MinimumHosts: 5, RequestVolume: 10},
	}
	g, eps = odTestGroup(5, sr)
	results(eps[0], 5, 5)
	for _, e := range eps[1:] {
		results(e, 10, 0)
	}
	g.Sweep(t0, nil)
	if got := ejected(eps); !got[0] || got[1] || got[2] || got[3] || got[4] {
		t.Fatalf("success rate: ejected %v; want e0 only", got)
	}
	// Fewer than minimum_hosts endpoints with enough RPCs: none ejected.
	g, eps = odTestGroup(5, sr)
	results(eps[0], 5, 5)
	for _, e := range eps[1:4] {
		results(e, 10, 0)
	}
	if g.Sweep(t0, nil); ejected(eps)[0] {
		t.Fatalf("success rate with 4 of minimum 5 hosts: e0 ejected")
	}
}

// TestOutlierDetection_Start checks the interval timer: a whole interval
// for a new detector, the rest of the interval after an update (as gRPC
// restarts its timer on every update), a whole one after a sweep; and
// that a new detector starts counting from zero.
func TestOutlierDetection_Start(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d, eps := odTestGroup(2, &resources.OutlierDetection{Interval: 10 * time.Second, MaxEjectionPercent: 100,
		FailurePercentage: &resources.FailurePercentageEjection{Threshold: 50, EnforcementPercentage: 100, RequestVolume: 1}})
	results(eps[0], 0, 5) // before Start: not counted
	if got := d.Start(t0); got != 10*time.Second {
		t.Errorf("Start of a new detector = %v; want the whole interval", got)
	}
	if got := d.Start(t0.Add(4 * time.Second)); got != 6*time.Second {
		t.Errorf("Start 4 s into the interval = %v; want 6 s", got)
	}
	if got := d.Start(t0.Add(12 * time.Second)); got != 0 {
		t.Errorf("Start after the interval's end = %v; want 0", got)
	}
	if changes := d.Sweep(t0.Add(10*time.Second), nil); len(changes) != 0 {
		t.Errorf("Sweep counted results from before Start: %+v", changes)
	}
	if got := d.Start(t0.Add(10 * time.Second)); got != 10*time.Second {
		t.Errorf("Start after a sweep = %v; want the whole interval", got)
	}
}
