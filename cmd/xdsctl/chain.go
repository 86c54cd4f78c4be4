// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"slices"
	"sync"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
)

// chainFollower watches a Listener and everything it leads to, the way a
// gRPC channel does (gRFC A74, without waiting for a complete
// configuration): the Listener; its RouteConfiguration, unless it is
// inline; every cluster named by a route (a cluster or weighted clusters)
// and, for aggregate clusters, their children; and the
// ClusterLoadAssignment of every EDS cluster, named by its EDS service name
// or else the cluster name. Watches of resources no longer referenced are
// cancelled. Every event is passed to emit.
//
// A resource error drops the resource's value, so what it led to is no
// longer watched until it comes back.
type chainFollower struct {
	// Initialized at creation time and read-only afterwards.
	c     *client.Client
	e     *env
	emit  func(event)              // called with mu held, on the client's callback goroutine
	root  resourceKey              // the Listener
	kinds map[string]*resourceKind // by type URL
	order map[string]int           // watch start order of the kinds, by type URL

	// mu guards the fields below. Watch and the cancel funcs are called
	// with it held: neither waits for a watcher callback, so a callback
	// blocked on mu cannot deadlock them.
	mu      sync.Mutex
	closed  bool                              // set by stop
	watches map[resourceKey]*followedResource // every active watch
}

// followedResource is one watch of the chain follower.
type followedResource struct {
	cancel func() // cancels the watch
	value  any    // the last value; nil before the first or after a resource error
}

// followChain starts following the Listener named listener. Stop it with
// stop before closing c.
func followChain(c *client.Client, e *env, listener string, emit func(event)) *chainFollower {
	f := &chainFollower{
		c:       c,
		e:       e,
		emit:    emit,
		root:    resourceKey{listenerKind.typeURL, resources.CanonicalName(listener)},
		watches: make(map[resourceKey]*followedResource),
		kinds:   make(map[string]*resourceKind),
		order:   make(map[string]int),
	}
	for i, k := range []*resourceKind{listenerKind, routeKind, clusterKind, endpointsKind} {
		f.kinds[k.typeURL] = k
		f.order[k.typeURL] = i
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reconcileLocked()
	return f
}

// stop cancels every watch. Events already being delivered are dropped.
func (f *chainFollower) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for key, w := range f.watches {
		w.cancel()
		delete(f.watches, key)
	}
}

// handle records ev of watch w and updates the set of watches.
func (f *chainFollower) handle(key resourceKey, w *followedResource, ev event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.watches[key] != w {
		return // cancelled while the event was queued
	}
	switch ev.Kind {
	case eventChanged:
		w.value = ev.Value
	case eventResourceError:
		w.value = nil
	}
	f.emit(ev)
	f.reconcileLocked()
}

// reconcileLocked starts the watches the current values call for, in
// chain order, and cancels those no longer called for.
func (f *chainFollower) reconcileLocked() {
	want := f.wantedLocked()
	for key, w := range f.watches {
		if !want[key] {
			w.cancel()
			delete(f.watches, key)
		}
	}
	var start []resourceKey
	for key := range want {
		if f.watches[key] == nil {
			start = append(start, key)
		}
	}
	slices.SortFunc(start, func(a, b resourceKey) int {
		return cmp.Or(cmp.Compare(f.order[a.typeURL], f.order[b.typeURL]), cmp.Compare(a.name, b.name))
	})
	for _, key := range start {
		w := &followedResource{}
		f.watches[key] = w
		w.cancel = f.kinds[key.typeURL].watch(f.c, f.e, key.name, func(ev event) { f.handle(key, w, ev) })
	}
}

// wantedLocked returns the resources the current values lead to.
func (f *chainFollower) wantedLocked() map[resourceKey]bool {
	want := map[resourceKey]bool{f.root: true}
	var rcs []*resources.RouteConfig
	if lis, _ := f.valueLocked(f.root).(*resources.Listener); lis != nil {
		switch {
		case lis.RouteConfigName != "":
			key := resourceKey{routeKind.typeURL, resources.CanonicalName(lis.RouteConfigName)}
			want[key] = true
			if rc, _ := f.valueLocked(key).(*resources.RouteConfig); rc != nil {
				rcs = append(rcs, rc)
			}
		case lis.InlineRouteConfig != nil:
			rcs = append(rcs, lis.InlineRouteConfig)
		}
	}
	var clusters []string
	for _, rc := range rcs {
		clusters = append(clusters, routeClusters(rc)...)
	}
	for len(clusters) > 0 {
		name := resources.CanonicalName(clusters[0])
		clusters = clusters[1:]
		key := resourceKey{clusterKind.typeURL, name}
		if want[key] {
			continue
		}
		want[key] = true
		cl, _ := f.valueLocked(key).(*resources.Cluster)
		if cl == nil {
			continue
		}
		switch cl.Kind {
		case resources.ClusterKindEDS:
			eds := cl.EDSServiceName
			if eds == "" {
				eds = cl.Name
			}
			want[resourceKey{endpointsKind.typeURL, resources.CanonicalName(eds)}] = true
		case resources.ClusterKindAggregate:
			clusters = append(clusters, cl.AggregateClusters...)
		}
	}
	return want
}

func (f *chainFollower) valueLocked(key resourceKey) any {
	if w := f.watches[key]; w != nil {
		return w.value
	}
	return nil
}

// routeClusters returns the clusters named by the routes of rc, in route
// order, without repeats.
func routeClusters(rc *resources.RouteConfig) []string {
	var out []string
	add := func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, vh := range rc.VirtualHosts {
		for _, r := range vh.Routes {
			switch r.Action.Kind {
			case resources.RouteActionCluster:
				add(r.Action.Cluster)
			case resources.RouteActionWeightedClusters:
				for _, wc := range r.Action.WeightedClusters {
					add(wc.Name)
				}
			}
		}
	}
	return out
}
