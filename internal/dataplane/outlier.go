// SPDX-License-Identifier: Apache-2.0

package dataplane

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/proxyless/xds/resources"
)

// Outlier detection (gRFC A50), as one OutlierDetector per priority of a
// leaf cluster: the result of every request is counted for the endpoint
// it went to (OutlierEndpoint.Record); at the end of every interval
// (Sweep), the detector swaps its endpoints' counters and runs the success
// rate and failure percentage algorithms on the last interval's counts,
// then unejects the endpoints whose ejection time (base_ejection_time ×
// the number of ejections, decayed by one per interval without ejection,
// at most max(base, max)) is over. The data path stops picking an ejected
// endpoint; a gRPC channel keeps its connections up.

// outlierBucket counts the results of requests to one endpoint in an
// interval.
type outlierBucket struct {
	successes, failures atomic.Uint32
}

// OutlierEndpoint is the outlier detection state of one endpoint. Record
// is safe for concurrent use without lock; the rest is guarded by the
// detector's owner.
type OutlierEndpoint struct {
	// active counts the requests ending now; Record loads it and adds to
	// it without lock. Sweep swaps it.
	active atomic.Pointer[outlierBucket]

	// Guarded by the owner of the detector.
	inactive   outlierBucket // the last interval's counts
	ejectedAt  time.Time     // zero when not ejected
	multiplier int64         // ejections, decayed by one per interval without
	// The consecutive failures of each kind (RecordConsecutive).
	consecutive5xx, consecutiveGateway uint32
}

func newOutlierEndpoint() *OutlierEndpoint {
	e := &OutlierEndpoint{}
	e.active.Store(new(outlierBucket))
	return e
}

// Record counts the result of one request to the endpoint: a success
// when err is nil. Safe for concurrent use.
func (e *OutlierEndpoint) Record(err error) {
	b := e.active.Load()
	if err == nil {
		b.successes.Add(1)
	} else {
		b.failures.Add(1)
	}
}

// Ejected reports whether the endpoint is ejected; the caller holds the
// detector owner's lock.
func (e *OutlierEndpoint) Ejected() bool { return !e.ejectedAt.IsZero() }

// OutlierDetector is the outlier detection of one priority of a leaf
// cluster. It is not safe for concurrent use: its owner guards it, but
// for the endpoints' Record.
type OutlierDetector struct {
	cfg        *resources.OutlierDetection // never nil, not a no-op
	endpoints  map[string]*OutlierEndpoint // by their addresses (Endpoint.Key)
	addrs      map[string]*OutlierEndpoint // by address
	ejected    int                         // endpoints ejected
	timerStart time.Time                   // the start of the current interval; zero before the first
	// OnDecision, when set, is told of each outlier found by Sweep (gRFC
	// A91): its detection method ("success_rate" or
	// "failure_percentage"), and why it was not ejected
	// ("max_ejection_overflow", "enforcement_percentage"; "" when it
	// was). Called by Sweep, under the detector's owner's lock.
	OnDecision func(method, unenforcedReason string)
}

// NewOutlierDetector returns a detector of cfg (a Priority.Outlier: not
// nil, not a no-op) with no endpoint.
func NewOutlierDetector(cfg *resources.OutlierDetection) *OutlierDetector {
	return &OutlierDetector{cfg: cfg}
}

// SetConfig replaces the detector's config (a Priority.Outlier); its
// endpoints' state stays.
func (d *OutlierDetector) SetConfig(cfg *resources.OutlierDetection) { d.cfg = cfg }

// SetEndpoints makes eps the endpoints of d, keeping the state of those
// it had (by Endpoint.Key); an ejected endpoint that goes is no longer
// counted as ejected.
func (d *OutlierDetector) SetEndpoints(eps []Endpoint) {
	old := d.endpoints
	d.endpoints = make(map[string]*OutlierEndpoint, len(eps))
	d.addrs = make(map[string]*OutlierEndpoint, len(eps))
	for i := range eps {
		k := eps[i].Key()
		e := old[k]
		if e == nil {
			e = newOutlierEndpoint()
		}
		d.endpoints[k] = e
		for _, a := range eps[i].Addresses {
			if _, dup := d.addrs[a]; !dup {
				d.addrs[a] = e
			}
		}
	}
	d.ejected = 0
	for _, e := range d.endpoints {
		if e.Ejected() {
			d.ejected++
		}
	}
}

// Endpoint returns the endpoint of address addr, nil when none has it.
func (d *OutlierDetector) Endpoint(addr string) *OutlierEndpoint { return d.addrs[addr] }

// Start returns how long the current interval lasts from now: the whole
// interval for a new detector, whose counters start from zero at now; the
// rest of the current interval otherwise, as gRPC restarts its timer on
// every update. The owner calls Sweep when it is over.
func (d *OutlierDetector) Start(now time.Time) time.Duration {
	if d.timerStart.IsZero() {
		d.timerStart = now
		for _, e := range d.endpoints {
			e.active.Store(new(outlierBucket))
			e.inactive.successes.Store(0)
			e.inactive.failures.Store(0)
		}
		return d.cfg.Interval
	}
	return max(0, d.cfg.Interval-now.Sub(d.timerStart))
}

// OutlierChange is an ejection or an unejection of an endpoint, for the
// data path to apply.
type OutlierChange struct {
	Endpoint *OutlierEndpoint
	Eject    bool
}

// Sweep ends an interval, at now (gRFC A50 "Interval timer"): it swaps the
// counters, runs the algorithms, decays or ends the ejections, starts
// the next interval at now, and returns the changes, appended to changes.
func (d *OutlierDetector) Sweep(now time.Time, changes []OutlierChange) []OutlierChange {
	d.timerStart = now
	for _, e := range d.endpoints {
		b := e.active.Swap(new(outlierBucket))
		e.inactive.successes.Store(b.successes.Load())
		e.inactive.failures.Store(b.failures.Load())
	}
	if sr := d.cfg.SuccessRate; sr != nil {
		changes = d.successRate(sr, now, changes)
	}
	if fp := d.cfg.FailurePercentage; fp != nil {
		changes = d.failurePercentage(fp, now, changes)
	}
	base := d.cfg.BaseEjectionTime
	maxTime := max(base, d.cfg.MaxEjectionTime)
	for _, e := range d.endpoints {
		if e.ejectedAt.IsZero() {
			if e.multiplier > 0 {
				e.multiplier--
			}
			continue
		}
		t := maxTime
		if e.multiplier < int64(math.MaxInt64/max(base, 1)) {
			t = min(time.Duration(e.multiplier)*base, maxTime)
		}
		if now.After(e.ejectedAt.Add(t)) {
			changes = d.uneject(e, changes)
		}
	}
	return changes
}

// candidates returns the endpoints with at least volume requests in the
// last interval.
func (d *OutlierDetector) candidates(volume uint32) []*OutlierEndpoint {
	var out []*OutlierEndpoint
	for _, e := range d.endpoints {
		if e.inactive.successes.Load()+e.inactive.failures.Load() >= volume {
			out = append(out, e)
		}
	}
	return out
}

func (e *OutlierEndpoint) successRate() float64 {
	s, f := float64(e.inactive.successes.Load()), float64(e.inactive.failures.Load())
	return s / (s + f)
}

// successRate is A50's success rate algorithm.
func (d *OutlierDetector) successRate(sr *resources.SuccessRateEjection, now time.Time, changes []OutlierChange) []OutlierChange {
	cs := d.candidates(sr.RequestVolume)
	if len(cs) == 0 || len(cs) < int(sr.MinimumHosts) {
		return changes
	}
	var mean, sq float64
	for _, e := range cs {
		mean += e.successRate()
	}
	mean /= float64(len(cs))
	for _, e := range cs {
		dev := e.successRate() - mean
		sq += dev * dev
	}
	required := mean - math.Sqrt(sq/float64(len(cs)))*(float64(sr.StdevFactor)/1000)
	for _, e := range cs {
		if e.successRate() < required {
			changes = d.maybeEject(e, "success_rate", sr.EnforcementPercentage, now, changes)
		}
	}
	return changes
}

// failurePercentage is A50's failure percentage algorithm.
func (d *OutlierDetector) failurePercentage(fp *resources.FailurePercentageEjection, now time.Time, changes []OutlierChange) []OutlierChange {
	cs := d.candidates(fp.RequestVolume)
	if len(cs) == 0 || len(cs) < int(fp.MinimumHosts) {
		return changes
	}
	for _, e := range cs {
		if (1-e.successRate())*100 > float64(fp.Threshold) {
			changes = d.maybeEject(e, "failure_percentage", fp.EnforcementPercentage, now, changes)
		}
	}
	return changes
}

// maybeEject ejects e, an outlier by method, with probability
// enforcement %, unless it is ejected or max_ejection_percent is
// reached, and tells OnDecision.
func (d *OutlierDetector) maybeEject(e *OutlierEndpoint, method string, enforcement uint32, now time.Time, changes []OutlierChange) []OutlierChange {
	if !e.ejectedAt.IsZero() {
		return changes
	}
	if float64(d.ejected)/float64(len(d.endpoints))*100 >= float64(d.cfg.MaxEjectionPercent) {
		d.decided(method, "max_ejection_overflow")
		return changes
	}
	if rand.Uint32N(100) >= enforcement {
		d.decided(method, "enforcement_percentage")
		return changes
	}
	d.decided(method, "")
	d.ejected++
	e.ejectedAt = now
	e.multiplier++
	return append(changes, OutlierChange{Endpoint: e, Eject: true})
}

func (d *OutlierDetector) decided(method, reason string) {
	if d.OnDecision != nil {
		d.OnDecision(method, reason)
	}
}

func (d *OutlierDetector) uneject(e *OutlierEndpoint, changes []OutlierChange) []OutlierChange {
	d.ejected--
	e.ejectedAt = time.Time{}
	return append(changes, OutlierChange{Endpoint: e, Eject: false})
}
