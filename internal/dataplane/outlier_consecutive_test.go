// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"testing"
	"time"

	"github.com/proxyless/xds/resources"
)

// TestRecordConsecutive: consecutive_5xx ejects at the failure that
// reaches its threshold, a success resets the count; consecutive gateway
// failures count 502, 503, 504 and local errors only;
// max_ejection_percent holds.
func TestRecordConsecutive(t *testing.T) {
	eps := []Endpoint{{Addresses: []string{"10.0.0.1:80"}}, {Addresses: []string{"10.0.0.2:80"}}, {Addresses: []string{"10.0.0.3:80"}}}
	now := time.Unix(1000, 0)
	newDet := func(od *resources.OutlierDetection) *OutlierDetector {
		od.Interval, od.BaseEjectionTime, od.MaxEjectionTime = 10*time.Second, 30*time.Second, 300*time.Second
		d := NewOutlierDetector(od)
		d.SetEndpoints(eps)
		d.Start(now)
		return d
	}
	d := newDet(&resources.OutlierDetection{MaxEjectionPercent: 100, Consecutive5xx: &resources.ConsecutiveEjection{Threshold: 3, EnforcementPercentage: 100}})
	e := d.Endpoint("10.0.0.1:80")
	for i, step := range []struct {
		status int
		local  bool
		eject  bool
	}{{500, false, false}, {503, false, false}, {200, false, false}, {500, false, false}, {0, true, false}, {502, false, true}} {
		ch := d.RecordConsecutive(e, step.status, step.local, now, nil)
		if got := len(ch) == 1 && ch[0].Eject && ch[0].Endpoint == e; got != step.eject {
			t.Fatalf("step %d (status %d, local %v): changes %v, want ejection = %v", i, step.status, step.local, ch, step.eject)
		}
	}
	if !e.Ejected() {
		t.Error("endpoint not ejected after 3 consecutive 5xx")
	}

	g := newDet(&resources.OutlierDetection{MaxEjectionPercent: 100, ConsecutiveGatewayFailure: &resources.ConsecutiveEjection{Threshold: 2, EnforcementPercentage: 100}})
	e = g.Endpoint("10.0.0.2:80")
	if ch := g.RecordConsecutive(e, 500, false, now, nil); len(ch) != 0 {
		t.Errorf("a 500 counted as a gateway failure: %v", ch)
	}
	g.RecordConsecutive(e, 504, false, now, nil)
	if ch := g.RecordConsecutive(e, 500, false, now, nil); len(ch) != 0 {
		t.Error("a 500 between gateway failures did not reset the count")
	}
	g.RecordConsecutive(e, 0, true, now, nil)
	if ch := g.RecordConsecutive(e, 503, false, now, nil); len(ch) != 1 {
		t.Errorf("local error then 503: %v, want an ejection", ch)
	}

	m := newDet(&resources.OutlierDetection{MaxEjectionPercent: 30, Consecutive5xx: &resources.ConsecutiveEjection{Threshold: 1, EnforcementPercentage: 100}})
	m.RecordConsecutive(m.Endpoint("10.0.0.1:80"), 500, false, now, nil)
	if ch := m.RecordConsecutive(m.Endpoint("10.0.0.2:80"), 500, false, now, nil); len(ch) != 0 {
		t.Errorf("second ejection beyond max_ejection_percent 30 with 1 of 3 ejected endpoints: %v", ch)
	}
	// The ejection ends at a sweep after base_ejection_time.
	if ch := m.Sweep(now.Add(31*time.Second), nil); len(ch) != 1 || ch[0].Eject {
		t.Errorf("sweep after the ejection time: %v, want one unejection", ch)
	}
}
