// SPDX-License-Identifier: Apache-2.0

package router

import "sync/atomic"

// clusters is the router's state of each route cluster: the failover
// state of its priorities, and its RPCs in flight. A cluster that a new
// configuration no longer has keeps its children while it has RPCs in
// flight (retained), as gRPC's cluster manager keeps the child of a
// cluster its config selector still refers to (gRFC A28, A31); the last
// of them to end has the children closed. Guarded by the router's mu.
type clusters struct {
	prios    map[string][]*prioState // by route cluster, one per priority (priority.go)
	refs     map[string]*clusterRef  // RPCs in flight by route cluster: of the configuration, and retained
	retained map[string]*Cluster     // clusters no longer in the configuration whose RPCs are in flight: their children stay
}

// clusterRef counts the RPCs in flight that were picked for a route
// cluster, from the pick to their end (balancer.PickResult.Done).
type clusterRef struct {
	n       atomic.Int64
	retired atomic.Bool // set, under r.mu, while the cluster is retained
	r       *router
}

// release notes the end of an RPC of the cluster: the last RPC of a
// retired cluster has its children closed, on a goroutine of the router.
func (c *clusterRef) release() {
	if c.n.Add(-1) == 0 && c.retired.Load() {
		r := c.r
		r.mu.Lock()
		r.goLocked(func() { r.withChildren(r.pruneChildren) })
		r.mu.Unlock()
	}
}

// keep makes cluster name, of n priorities, one of the configuration: no
// longer retained, with a failover state per priority (those of
// priorities it no longer has stopped).
func (cs *clusters) keep(r *router, name string, n int) {
	ref := cs.refs[name]
	if ref == nil {
		ref = &clusterRef{r: r}
		cs.refs[name] = ref
	}
	ref.retired.Store(false)
	delete(cs.retained, name)
	ps := cs.prios[name]
	for len(ps) < n {
		ps = append(ps, &prioState{})
	}
	for _, p := range ps[n:] {
		p.stopTimers()
	}
	cs.prios[name] = ps[:n]
}

// retire stops the timers of the clusters that cfg no longer has, and
// keeps (retains) those of old that have RPCs in flight: their priorities
// stay started.
func (cs *clusters) retire(old, cfg *Config) {
	for name, ps := range cs.prios {
		if _, ok := cfg.Clusters[name]; !ok {
			for _, p := range ps {
				p.stopTimers()
			}
			if ref := cs.refs[name]; ref == nil || ref.n.Load() == 0 {
				delete(cs.prios, name)
			} // else retained (see pruneLocked): its children stay started
		}
	}
	if old != nil {
		for name, c := range old.Clusters {
			if _, ok := cfg.Clusters[name]; !ok {
				cs.retained[name] = c
			}
		}
	}
}

// stopTimers stops the failover and child retention timers of every
// cluster.
func (cs *clusters) stopTimers() {
	for _, ps := range cs.prios {
		for _, p := range ps {
			p.stopTimers()
		}
	}
}

// pruneLocked forgets the retained clusters that no longer have an RPC in
// flight, adds the children of the others to want, and removes the
// children not in want, which the caller closes (closeChildren) after
// releasing mu, under childMu.
func (r *router) pruneLocked(want map[string]bool) []*child {
	cs := &r.clusters
	for name, c := range cs.retained {
		ref := cs.refs[name]
		if ref == nil || ref.n.Load() == 0 {
			if ref != nil {
				ref.retired.Store(false)
			}
			delete(cs.retained, name)
			delete(cs.refs, name)
			delete(cs.prios, name)
			continue
		}
		ref.retired.Store(true)
		for _, p := range c.Priorities {
			for _, l := range p.Children {
				want[l.Key] = true
			}
		}
	}
	var removed []*child
	for key, c := range r.children.byKey {
		if !want[key] {
			c.removed = true
			delete(r.children.byKey, key)
			removed = append(removed, c)
		}
	}
	return removed
}

// pruneChildren closes the children that are no longer wanted: those of
// the retained clusters whose last RPC ended, and those of priorities no
// longer started. It runs in withChildren, which holds childMu.
func (r *router) pruneChildren() {
	r.mu.Lock()
	if r.closed || r.cfg == nil {
		r.mu.Unlock()
		return
	}
	want := make(map[string]bool)
	r.wantPluginsLocked(want)
	for name, c := range r.cfg.Clusters {
		ps := r.clusters.prios[name]
		for i, p := range c.Priorities {
			if i < len(ps) && ps[i].started {
				for _, l := range p.Children {
					want[l.Key] = true
				}
			}
		}
	}
	removed := r.pruneLocked(want)
	r.mu.Unlock()
	closeChildren(removed)
}
