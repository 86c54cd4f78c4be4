// SPDX-License-Identifier: Apache-2.0

package router

import (
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"

	"github.com/proxyless/xds/lrs"
)

// prioState is the failover state of one priority of a cluster (gRFC A56).
// Guarded by the router's mu.
type prioState struct {
	started    bool        // its children were created: the selection reached it once
	failedOver bool        // the failover timer fired; treated as failed until READY
	stop       func() bool // stops the running failover timer; nil when none
	gen        uint64      // counts the timers started, so that a stale one does nothing
	retire     func() bool // stops the running child retention timer; nil when none
	retireGen  uint64      // counts the retention timers started
}

func (p *prioState) stopTimer() {
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
}

// stopTimers stops the failover and the child retention timers.
func (p *prioState) stopTimers() {
	p.stopTimer()
	if p.retire != nil {
		p.retire()
		p.retire = nil
	}
}

// updateStateLocked selects the priority of each cluster (gRFC A56),
// builds a picker over the selected priorities, and gives it to the
// channel with the aggregated connectivity state: READY when a selected
// priority is READY, else CONNECTING, IDLE, TRANSIENT_FAILURE in that
// order.
func (r *router) updateStateLocked() {
	if r.cfg == nil {
		return
	}
	p := &picker{cfg: r.cfg, clusters: make(map[string]*clusterPicker, len(r.cfg.Clusters)), channelID: r.channelID, hostnames: &r.hostnames}
	agg := connectivity.TransientFailure
	var states map[string]connectivity.State // for RLS's targets (rls.go)
	if len(r.cfg.Plugins) > 0 {
		states = make(map[string]connectivity.State, len(r.cfg.Clusters))
	}
	for _, pl := range r.cfg.Plugins {
		if c := r.children.byKey[pluginKey(pl)]; c != nil && pl.Err == nil {
			if p.plugins == nil {
				p.plugins = make(map[*Plugin]balancer.Picker, len(r.cfg.Plugins))
			}
			p.plugins[pl] = c.state.Picker
			agg = better(agg, c.state.ConnectivityState)
		}
	}
	for name, cl := range r.cfg.Clusters {
		cp := &clusterPicker{}
		p.clusters[name] = cp
		if cl.DP.Err != nil {
			cp.err = unavailable(cl.DP.Err.Error())
			if states != nil {
				states[name] = connectivity.TransientFailure
			}
			continue
		}
		i, st := r.selectPriorityLocked(name, cl)
		agg = better(agg, st)
		if states != nil {
			states[name] = st
		}
		prio := cl.Priorities[i]
		pp := newPrioPicker(prio, r.counters[prio.BreakerKey()], r.clusters.refs[name])
		var load *lrs.ClusterLoad
		if prio.LoadReported && r.cfg.Load != nil {
			load = r.cfg.Load.Cluster(prio.Leaf, prio.LRSService)
		}
		pp.errs = dropErrors(prio, load)
		if prio.Policy.PerPriority {
			pp.ringLoad = load
		}
		pp.clusterLoad, pp.wrapped = load, prio.Outlier != nil || prio.Sessions
		if prio.Sessions {
			pp.sess = r.sess[prio.GroupKey()]
		}
		var best *child
		for _, l := range prio.Children {
			c := r.children.byKey[l.Key]
			if c == nil {
				continue
			}
			var ll *lrs.LocalityLoad
			if load != nil {
				ll = load.Locality(l.Locality)
			}
			if c.state.ConnectivityState == connectivity.Ready {
				pp.total += uint64(l.Weight)
				pp.ready = append(pp.ready, weightedPicker{cum: pp.total, p: c.state.Picker, load: ll, labels: l.Labels})
			}
			if best == nil || rank(c.state.ConnectivityState) > rank(best.state.ConnectivityState) {
				best = c
				pp.other, pp.otherLoad, pp.otherLabels = c.state.Picker, ll, l.Labels
			}
			if prio.Policy.PerPriority {
				pp.ring = c
				pp.ready = pp.ready[:0:0] // one child: picked through other
				pp.total = 0
				pp.other, pp.otherLoad, pp.otherLabels = c.state.Picker, nil, nil
			}
		}
		cp.prio = pp
	}
	r.current.Store(p)
	r.targets.states = states
	r.notifyTargetsLocked()
	r.cc.UpdateState(balancer.State{ConnectivityState: agg, Picker: p})
}

// selectPriorityLocked returns the priority of cluster name to use and its
// state (gRFC A56): the first that is READY or IDLE, or CONNECTING with
// its failover timer not yet fired (which starts it); priorities that are
// in TRANSIENT_FAILURE, or whose timer fired, are skipped. When every
// priority fails, the last one. A priority is started (its children
// created) the first time the selection reaches it, so lower priorities
// connect only when the higher ones fail; once started, it stays so
// while in use, and for childRetention after a higher priority is used
// instead (see retainLowerLocked).
func (r *router) selectPriorityLocked(name string, c *Cluster) (int, connectivity.State) {
	i, st := r.choosePriorityLocked(name, c)
	r.retainLowerLocked(r.clusters.prios[name], i)
	return i, st
}

// retainLowerLocked stops the child retention timers of the priorities
// up to i, the one in use, and starts them for the started priorities
// below it (gRFC A56): when such a timer fires, the priority's children
// are closed, to be created again if the selection reaches it.
func (r *router) retainLowerLocked(ps []*prioState, i int) {
	for j, s := range ps {
		if j <= i || !s.started {
			if s.retire != nil {
				s.retire()
				s.retire = nil
			}
			continue
		}
		if s.retire != nil {
			continue
		}
		s.retireGen++
		gen := s.retireGen
		s.retire = r.newTimerLocked(childRetention, func() {
			r.withChildren(func() {
				r.mu.Lock()
				if r.closed || s.retire == nil || s.retireGen != gen {
					r.mu.Unlock()
					return
				}
				s.retire = nil
				s.stopTimer()
				s.started, s.failedOver = false, false
				r.children.dirty = true
				r.mu.Unlock()
				r.pruneChildren()
			})
		})
	}
}

// choosePriorityLocked is selectPriorityLocked without the child
// retention.
func (r *router) choosePriorityLocked(name string, c *Cluster) (int, connectivity.State) {
	ps := r.clusters.prios[name]
	last := connectivity.TransientFailure
	for i, p := range c.Priorities {
		s := ps[i]
		if !s.started {
			// Reached for the first time: create its children, which
			// start CONNECTING (and so start its failover timer).
			s.started = true
			r.startPriorityLocked(p, nil)
		}
		st := r.priorityStateLocked(p)
		last = st
		switch st {
		case connectivity.Ready, connectivity.Idle:
			s.stopTimer()
			s.failedOver = false
			return i, st
		case connectivity.Connecting:
			if s.failedOver {
				continue
			}
			if s.stop == nil {
				s.gen++
				gen := s.gen
				s.stop = r.newTimerLocked(failoverTimeout, func() {
					r.withChildren(func() {
						r.mu.Lock()
						defer r.mu.Unlock()
						if r.closed || s.stop == nil || s.gen != gen {
							return
						}
						s.stop, s.failedOver = nil, true
						r.children.dirty = true
					})
				})
			}
			return i, st
		default:
			s.stopTimer()
		}
	}
	return len(c.Priorities) - 1, last
}

// priorityStateLocked aggregates the states of a priority's children:
// READY if one is, else CONNECTING, IDLE, TRANSIENT_FAILURE.
func (r *router) priorityStateLocked(p *Priority) connectivity.State {
	st := connectivity.TransientFailure
	for _, l := range p.Children {
		if c := r.children.byKey[l.Key]; c != nil {
			st = better(st, c.state.ConnectivityState)
		}
	}
	return st
}

func rank(s connectivity.State) int {
	switch s {
	case connectivity.Ready:
		return 4
	case connectivity.Connecting:
		return 3
	case connectivity.Idle:
		return 2
	}
	return 1
}

func better(a, b connectivity.State) connectivity.State {
	if rank(b) > rank(a) {
		return b
	}
	return a
}
