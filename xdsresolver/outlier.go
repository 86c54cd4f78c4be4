// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/resources"
)

// Outlier detection (gRFC A50), on gRPC's public balancer API: grpc-go's
// outlier_detection policy is internal. As in gRPC's xDS LB tree, one
// odGroup watches the endpoints of one priority of a leaf cluster,
// whatever the endpoint policy under it (one child per locality, or one
// for the priority):
//
//   - every SubConn a child of the priority creates is wrapped
//     (subConn, subconn.go), so that the router's picker counts the result of each
//     RPC for the SubConn's endpoint (its Done callback), and so that an
//     ejected endpoint's SubConns report TRANSIENT_FAILURE through the
//     health listener that gRPC's endpoint policies register (pick_first
//     under round_robin, ring_hash, least_request and
//     weighted_round_robin): they stop picking it, while its connection
//     stays up;
//   - every interval, the group swaps the counters of its endpoints and
//     runs the success rate and failure percentage algorithms on the
//     last interval's counts, then unejects the endpoints whose ejection
//     time (base_ejection_time × the number of ejections, decayed by one
//     per interval without ejection, at most max(base, max)) is over.
//
// A plain pick_first policy registers no health listener, and so is not
// affected, as in gRPC.

// odBucket counts the results of RPCs to one endpoint in an interval.
type odBucket struct {
	successes, failures atomic.Uint32
}

// odEndpoint is the outlier detection state of one endpoint.
type odEndpoint struct {
	// active counts the RPCs ending now; the picker's Done callbacks
	// load it and add to it without lock. The sweep swaps it.
	active atomic.Pointer[odBucket]

	// Guarded by the router's mu.
	inactive   odBucket          // the last interval's counts
	ejectedAt  time.Time         // zero when not ejected
	multiplier int64             // ejections, decayed by one per interval without
	subConns   map[*subConn]bool // the SubConns of the endpoint
}

func newODEndpoint() *odEndpoint {
	e := &odEndpoint{subConns: make(map[*subConn]bool)}
	e.active.Store(new(odBucket))
	return e
}

// record counts the result of one RPC.
func (e *odEndpoint) record(err error) {
	b := e.active.Load()
	if err == nil {
		b.successes.Add(1)
	} else {
		b.failures.Add(1)
	}
}

// odGroup is the outlier detection of one priority of a leaf cluster.
// Guarded by the router's mu, but for the endpoints' active buckets.
type odGroup struct {
	cfg        *resources.OutlierDetection // never nil, not a no-op
	endpoints  map[string]*odEndpoint      // by their addresses (endpointAddrs)
	addrs      map[string]*odEndpoint      // by address
	ejected    int                         // endpoints ejected
	timerStart time.Time                   // the start of the current interval; zero before the first
	stop       func() bool                 // stops the interval timer; nil when none runs
	gen        uint64                      // counts the timers started
}

// odActive reports whether od ejects anything: outlier detection with
// neither algorithm only counts (gRFC A50 "no-op" config), which the
// router skips.
func odActive(od *resources.OutlierDetection) bool {
	return od != nil && (od.SuccessRate != nil || od.FailurePercentage != nil)
}

// setEndpoints makes eps the endpoints of g, keeping the state of those
// it had; an ejected endpoint that goes is no longer counted as ejected.
func (g *odGroup) setEndpoints(eps []resolver.Endpoint) {
	old := g.endpoints
	g.endpoints = make(map[string]*odEndpoint, len(eps))
	g.addrs = make(map[string]*odEndpoint, len(eps))
	for _, ep := range eps {
		k := endpointAddrs(ep)
		e := old[k]
		if e == nil {
			e = newODEndpoint()
		}
		g.endpoints[k] = e
		for _, a := range ep.Addresses {
			if _, dup := g.addrs[a.Addr]; !dup {
				g.addrs[a.Addr] = e
			}
		}
	}
	g.ejected = 0
	for _, e := range g.endpoints {
		if !e.ejectedAt.IsZero() {
			g.ejected++
		}
	}
}

// odChange is an ejection or unejection for the caller to deliver to the
// SubConns' health listeners, under the router's childMu.
type odChange struct {
	sc    *subConn
	eject bool
}

// sweep runs at the end of an interval, at now (gRFC A50 "Interval
// timer"): it swaps the counters, runs the algorithms, decays or ends the
// ejections, and returns the changes to deliver.
func (g *odGroup) sweep(now time.Time) []odChange {
	g.timerStart = now
	for _, e := range g.endpoints {
		b := e.active.Swap(new(odBucket))
		e.inactive.successes.Store(b.successes.Load())
		e.inactive.failures.Store(b.failures.Load())
	}
	var changes []odChange
	if sr := g.cfg.SuccessRate; sr != nil {
		changes = g.successRate(sr, now, changes)
	}
	if fp := g.cfg.FailurePercentage; fp != nil {
		changes = g.failurePercentage(fp, now, changes)
	}
	base := g.cfg.BaseEjectionTime
	maxTime := max(base, g.cfg.MaxEjectionTime)
	for _, e := range g.endpoints {
		if e.ejectedAt.IsZero() {
			if e.multiplier > 0 {
				e.multiplier--
			}
			continue
		}
		d := maxTime
		if e.multiplier < int64(math.MaxInt64/max(base, 1)) {
			d = min(time.Duration(e.multiplier)*base, maxTime)
		}
		if now.After(e.ejectedAt.Add(d)) {
			changes = g.uneject(e, changes)
		}
	}
	return changes
}

// candidates returns the endpoints with at least volume RPCs in the last
// interval.
func (g *odGroup) candidates(volume uint32) []*odEndpoint {
	var out []*odEndpoint
	for _, e := range g.endpoints {
		if e.inactive.successes.Load()+e.inactive.failures.Load() >= volume {
			out = append(out, e)
		}
	}
	return out
}

func (e *odEndpoint) successRate() float64 {
	s, f := float64(e.inactive.successes.Load()), float64(e.inactive.failures.Load())
	return s / (s + f)
}

// successRate is A50's success rate algorithm.
func (g *odGroup) successRate(sr *resources.SuccessRateEjection, now time.Time, changes []odChange) []odChange {
	cs := g.candidates(sr.RequestVolume)
	if len(cs) == 0 || len(cs) < int(sr.MinimumHosts) {
		return changes
	}
	var mean, sq float64
	for _, e := range cs {
		mean += e.successRate()
	}
	mean /= float64(len(cs))
	for _, e := range cs {
		d := e.successRate() - mean
		sq += d * d
	}
	required := mean - math.Sqrt(sq/float64(len(cs)))*(float64(sr.StdevFactor)/1000)
	for _, e := range cs {
		if e.successRate() < required {
			changes = g.maybeEject(e, sr.EnforcementPercentage, now, changes)
		}
	}
	return changes
}

// failurePercentage is A50's failure percentage algorithm.
func (g *odGroup) failurePercentage(fp *resources.FailurePercentageEjection, now time.Time, changes []odChange) []odChange {
	cs := g.candidates(fp.RequestVolume)
	if len(cs) == 0 || len(cs) < int(fp.MinimumHosts) {
		return changes
	}
	for _, e := range cs {
		if (1-e.successRate())*100 > float64(fp.Threshold) {
			changes = g.maybeEject(e, fp.EnforcementPercentage, now, changes)
		}
	}
	return changes
}

// maybeEject ejects e with probability enforcement %, unless it is
// ejected or max_ejection_percent is reached.
func (g *odGroup) maybeEject(e *odEndpoint, enforcement uint32, now time.Time, changes []odChange) []odChange {
	if !e.ejectedAt.IsZero() || float64(g.ejected)/float64(len(g.endpoints))*100 >= float64(g.cfg.MaxEjectionPercent) {
		return changes
	}
	if rand.Uint32N(100) >= enforcement {
		return changes
	}
	g.ejected++
	e.ejectedAt = now
	e.multiplier++
	for sc := range e.subConns {
		changes = append(changes, odChange{sc: sc, eject: true})
	}
	return changes
}

func (g *odGroup) uneject(e *odEndpoint, changes []odChange) []odChange {
	g.ejected--
	e.ejectedAt = time.Time{}
	for sc := range e.subConns {
		changes = append(changes, odChange{sc: sc, eject: false})
	}
	return changes
}

// odKey is the key of the outlier detection group of priority p.
func odKey(p *priorityConfig) string {
	return p.leaf + "\x00" + strconv.FormatUint(uint64(p.priority), 10)
}

// updateODLocked makes the outlier detection group of p (which has an
// active config) follow its config and endpoints, creating it if needed,
// and restarts its interval timer for the rest of the interval, as gRPC
// does on every update. The caller holds mu.
func (r *router) updateODLocked(p *priorityConfig) {
	k := odKey(p)
	g := r.ods[k]
	if g == nil {
		g = &odGroup{}
		r.ods[k] = g
	}
	g.cfg = p.od
	var eps []resolver.Endpoint
	for _, l := range p.localities {
		eps = append(eps, l.endpoints...)
	}
	g.setEndpoints(eps)
	r.startODTimerLocked(k, g)
}

// startODTimerLocked (re)starts the interval timer of group g, of key k:
// a whole interval from now for a new group (whose counters start from
// zero), the rest of the current interval otherwise.
func (r *router) startODTimerLocked(k string, g *odGroup) {
	if g.stop != nil {
		g.stop()
		g.stop = nil
	}
	now := time.Now()
	d := g.cfg.Interval
	if g.timerStart.IsZero() {
		g.timerStart = now
		for _, e := range g.endpoints {
			e.active.Store(new(odBucket))
			e.inactive.successes.Store(0)
			e.inactive.failures.Store(0)
		}
	} else {
		d = max(0, d-now.Sub(g.timerStart))
	}
	g.gen++
	gen := g.gen
	g.stop = r.newTimerLocked()(d, func() { r.odInterval(k, g, gen) })
}

// odInterval ends an interval of group g: it sweeps (see odGroup.sweep),
// starts the next interval, and delivers the ejections and unejections to
// the SubConns' health listeners, under childMu.
func (r *router) odInterval(k string, g *odGroup, gen uint64) {
	r.withChildren(func() {
		r.mu.Lock()
		if r.closed || g.stop == nil || g.gen != gen || r.ods[k] != g {
			r.mu.Unlock()
			return
		}
		g.stop = nil
		changes := g.sweep(time.Now())
		r.startODTimerLocked(k, g)
		live := changes[:0]
		for _, ch := range changes {
			if !ch.sc.c.removed {
				live = append(live, ch)
			}
		}
		r.mu.Unlock()
		for _, ch := range live {
			ch.sc.apply(ch.eject)
		}
	})
}

// pruneGroupsLocked stops and forgets the outlier detection groups and
// sessions of the priorities that neither the configuration nor a
// retained cluster has; the caller holds mu.
func (r *router) pruneGroupsLocked() {
	wantOD, wantSess := make(map[string]bool), make(map[string]bool)
	for _, ccs := range []map[string]*clusterConfig{r.cfg.clusters, r.retained} {
		for _, cc := range ccs {
			for _, p := range cc.priorities {
				wantOD[odKey(p)] = wantOD[odKey(p)] || p.od != nil
				wantSess[odKey(p)] = wantSess[odKey(p)] || p.session
			}
		}
	}
	for k, g := range r.ods {
		if !wantOD[k] {
			if g.stop != nil {
				g.stop()
				g.stop = nil
			}
			delete(r.ods, k)
		}
	}
	for k, g := range r.sess {
		if !wantSess[k] {
			g.close()
			delete(r.sess, k)
		}
	}
}
