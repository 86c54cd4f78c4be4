// SPDX-License-Identifier: Apache-2.0

package router

import (
	"time"

	"github.com/proxyless/xds/internal/dataplane"
)

// Outlier detection (gRFC A50), on gRPC's public balancer API: grpc-go's
// outlier_detection policy is internal. As in gRPC's xDS LB tree, one
// odGroup watches the endpoints of one priority of a leaf cluster,
// whatever the endpoint policy under it (one child per locality, or one
// for the priority), with the algorithm of dataplane.OutlierDetector:
//
//   - every SubConn a child of the priority creates is wrapped
//     (subConn, subconn.go), so that the router's picker counts the
//     result of each RPC for the SubConn's endpoint (its Done callback),
//     and so that an ejected endpoint's SubConns report TRANSIENT_FAILURE
//     through the health listener that gRPC's endpoint policies register
//     (pick_first under round_robin, ring_hash, least_request and
//     weighted_round_robin): they stop picking it, while its connection
//     stays up;
//   - at the end of every interval the detector sweeps, and the router
//     delivers its ejections and unejections to the SubConns of the
//     endpoints.
//
// A plain pick_first policy registers no health listener, and so is not
// affected, as in gRPC.

// odGroup is the outlier detection of one priority of a leaf cluster.
// Guarded by the router's mu.
type odGroup struct {
	det      *dataplane.OutlierDetector
	subConns map[*dataplane.OutlierEndpoint]map[*subConn]bool // the SubConns of each endpoint
	stop     func() bool                                      // stops the interval timer; nil when none runs
	gen      uint64                                           // counts the timers started
}

// add notes sc, a SubConn of endpoint e.
func (g *odGroup) add(e *dataplane.OutlierEndpoint, sc *subConn) {
	m := g.subConns[e]
	if m == nil {
		m = make(map[*subConn]bool)
		g.subConns[e] = m
	}
	m[sc] = true
}

// remove forgets sc, a SubConn of endpoint e, shut down.
func (g *odGroup) remove(e *dataplane.OutlierEndpoint, sc *subConn) {
	if m := g.subConns[e]; m != nil {
		delete(m, sc)
		if len(m) == 0 {
			delete(g.subConns, e)
		}
	}
}

func (g *odGroup) stopTimer() {
	if g.stop != nil {
		g.stop()
		g.stop = nil
	}
}

// updateODLocked makes the outlier detection group of p (which has an
// active config) follow its config and endpoints, creating it if needed,
// and restarts its interval timer for the rest of the interval, as gRPC
// does on every update. The caller holds mu.
func (r *router) updateODLocked(p *Priority) {
	k := p.GroupKey()
	g := r.ods[k]
	if g == nil {
		g = &odGroup{det: dataplane.NewOutlierDetector(p.Outlier), subConns: make(map[*dataplane.OutlierEndpoint]map[*subConn]bool)}
		g.det.OnDecision = ejectionRecorder(r.cc.MetricsRecorder, r.bopts.Target.String())
		r.ods[k] = g
	}
	g.det.SetConfig(p.Outlier)
	var eps []dataplane.Endpoint
	for _, l := range p.Localities {
		eps = append(eps, l.Endpoints...)
	}
	g.det.SetEndpoints(eps)
	r.startODTimerLocked(k, g)
}

// startODTimerLocked (re)starts the interval timer of group g, of key k,
// for the rest of the current interval (dataplane.OutlierDetector.Start).
func (r *router) startODTimerLocked(k string, g *odGroup) {
	g.stopTimer()
	d := g.det.Start(time.Now())
	g.gen++
	gen := g.gen
	g.stop = r.newTimerLocked(d, func() { r.odInterval(k, g, gen) })
}

// odInterval ends an interval of group g: it sweeps, starts the next
// interval, and delivers the ejections and unejections to the SubConns'
// health listeners, under childMu.
func (r *router) odInterval(k string, g *odGroup, gen uint64) {
	r.withChildren(func() {
		r.mu.Lock()
		if r.closed || g.stop == nil || g.gen != gen || r.ods[k] != g {
			r.mu.Unlock()
			return
		}
		g.stop = nil
		changes := g.det.Sweep(time.Now(), nil)
		r.startODTimerLocked(k, g)
		type delivery struct {
			sc    *subConn
			eject bool
		}
		var live []delivery
		for _, ch := range changes {
			for sc := range g.subConns[ch.Endpoint] {
				if !sc.c.removed {
					live = append(live, delivery{sc, ch.Eject})
				}
			}
		}
		r.mu.Unlock()
		for _, d := range live {
			d.sc.apply(d.eject)
		}
	})
}

// pruneGroupsLocked stops and forgets the outlier detection groups and
// sessions of the priorities that neither the configuration nor a
// retained cluster has; the caller holds mu.
func (r *router) pruneGroupsLocked() {
	wantOD, wantSess := make(map[string]bool), make(map[string]bool)
	for _, ccs := range []map[string]*Cluster{r.cfg.Clusters, r.clusters.retained} {
		for _, c := range ccs {
			for _, p := range c.Priorities {
				k := p.GroupKey()
				wantOD[k] = wantOD[k] || p.Outlier != nil
				wantSess[k] = wantSess[k] || p.Sessions
			}
		}
	}
	for k, g := range r.ods {
		if !wantOD[k] {
			g.stopTimer()
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
