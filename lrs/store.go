// SPDX-License-Identifier: Apache-2.0

package lrs

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/proxyless/xds/resources"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// Store holds the load data of clusters, by cluster and EDS service name,
// then by locality, until a Client reports it. Recording is lock-free on
// the RPC path once the ClusterLoad and LocalityLoad are held. A Store is
// safe for concurrent use; its zero value is not usable: use NewStore.
type Store struct {
	mu       sync.Mutex
	clusters map[clusterKey]*ClusterLoad
	now      func() time.Time
}

type clusterKey struct{ cluster, service string }

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{clusters: make(map[clusterKey]*ClusterLoad), now: time.Now}
}

// Cluster returns the load of the cluster and EDS service name service
// ("" when the cluster has none), created on first use. The same pointer
// is returned for the same names.
func (s *Store) Cluster(cluster, service string) *ClusterLoad {
	k := clusterKey{cluster, service}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusters[k]
	if c == nil {
		c = &ClusterLoad{cluster: cluster, service: service, localities: make(map[resources.LocalityID]*LocalityLoad), lastReport: s.now()}
		s.clusters[k] = c
	}
	return c
}

// ClusterLoad is the load of one cluster and EDS service name: dropped
// RPCs by category, and the RPCs sent to each locality. Safe for
// concurrent use.
type ClusterLoad struct {
	cluster, service string

	mu         sync.Mutex
	localities map[resources.LocalityID]*LocalityLoad
	drops      map[string]*atomic.Uint64
	lastReport time.Time

	uncategorized atomic.Uint64 // drops without category (circuit breaking)
}

// Locality returns the load of the locality id of the cluster, created on
// first use.
func (c *ClusterLoad) Locality(id resources.LocalityID) *LocalityLoad {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.localities[id]
	if l == nil {
		l = &LocalityLoad{}
		c.localities[id] = l
	}
	return l
}

// DropCounter returns the counter of RPCs dropped in category (a drop
// category of the ClusterLoadAssignment, gRFC A27); "" counts drops
// without category, such as RPCs refused by circuit breaking (gRFC A32),
// which count only in the total. Add 1 to it for each dropped RPC.
func (c *ClusterLoad) DropCounter(category string) *atomic.Uint64 {
	if category == "" {
		return &c.uncategorized
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops == nil {
		c.drops = make(map[string]*atomic.Uint64)
	}
	d := c.drops[category]
	if d == nil {
		d = new(atomic.Uint64)
		c.drops[category] = d
	}
	return d
}

// LocalityLoad counts the RPCs sent to one locality of a cluster, and
// sums the ORCA load its backends reported (AddBackendMetrics). Safe for
// concurrent use.
type LocalityLoad struct {
	issued, succeeded, errored atomic.Uint64
	inProgress                 atomic.Int64
	backend                    backendLoad
}

// Start records an RPC sent to the locality: issued, and in progress
// until Finish.
func (l *LocalityLoad) Start() {
	l.issued.Add(1)
	l.inProgress.Add(1)
}

// Finish records the end of an RPC started with Start: succeeded when
// err is nil, errored otherwise (as gRPC counts).
func (l *LocalityLoad) Finish(err error) {
	l.inProgress.Add(-1)
	if err == nil {
		l.succeeded.Add(1)
	} else {
		l.errored.Add(1)
	}
}

// Stats returns the load of the clusters wanted (by cluster name; nil
// means every cluster) since their previous Stats, and starts a new
// period for them: counts of issued, succeeded and errored RPCs per
// locality, RPCs in progress now, drops by category and in total, and the
// actual length of the period, and the ORCA load of each locality
// (AddBackendMetrics). Clusters with nothing to report
// (no RPC and no drop in the period, none in progress) are left out. The
// result is sorted by cluster, service, then locality.
func (s *Store) Stats(wanted func(cluster string) bool) []*v3endpointpb.ClusterStats {
	s.mu.Lock()
	cls := make([]*ClusterLoad, 0, len(s.clusters))
	for k, c := range s.clusters {
		if wanted == nil || wanted(k.cluster) {
			cls = append(cls, c)
		}
	}
	now := s.now()
	s.mu.Unlock()
	slices.SortFunc(cls, func(a, b *ClusterLoad) int {
		if a.cluster != b.cluster {
			return cmpString(a.cluster, b.cluster)
		}
		return cmpString(a.service, b.service)
	})
	var out []*v3endpointpb.ClusterStats
	for _, c := range cls {
		if cs := c.stats(now); cs != nil {
			out = append(out, cs)
		}
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *ClusterLoad) stats(now time.Time) *v3endpointpb.ClusterStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := &v3endpointpb.ClusterStats{ClusterName: c.cluster, ClusterServiceName: c.service, LoadReportInterval: durationpb.New(now.Sub(c.lastReport))}
	c.lastReport = now
	ids := make([]resources.LocalityID, 0, len(c.localities))
	for id := range c.localities {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b resources.LocalityID) int {
		if r := cmpString(a.Region, b.Region); r != 0 {
			return r
		}
		if r := cmpString(a.Zone, b.Zone); r != 0 {
			return r
		}
		return cmpString(a.SubZone, b.SubZone)
	})
	for _, id := range ids {
		l := c.localities[id]
		// inProgress is read first: an RPC finishing meanwhile is
		// counted in this report or the next, never twice.
		inProgress := max(l.inProgress.Load(), 0)
		us := &v3endpointpb.UpstreamLocalityStats{
			Locality:                &v3corepb.Locality{Region: id.Region, Zone: id.Zone, SubZone: id.SubZone},
			TotalIssuedRequests:     l.issued.Swap(0),
			TotalSuccessfulRequests: l.succeeded.Swap(0),
			TotalErrorRequests:      l.errored.Swap(0),
			TotalRequestsInProgress: uint64(inProgress),
		}
		l.backend.fill(us)
		if us.TotalIssuedRequests+us.TotalSuccessfulRequests+us.TotalErrorRequests+us.TotalRequestsInProgress > 0 {
			cs.UpstreamLocalityStats = append(cs.UpstreamLocalityStats, us)
		}
	}
	cats := make([]string, 0, len(c.drops))
	for cat := range c.drops {
		cats = append(cats, cat)
	}
	slices.Sort(cats)
	for _, cat := range cats {
		if n := c.drops[cat].Swap(0); n > 0 {
			cs.DroppedRequests = append(cs.DroppedRequests, &v3endpointpb.ClusterStats_DroppedRequests{Category: cat, DroppedCount: n})
			cs.TotalDroppedRequests += n
		}
	}
	cs.TotalDroppedRequests += c.uncategorized.Swap(0)
	if len(cs.UpstreamLocalityStats) == 0 && cs.TotalDroppedRequests == 0 {
		return nil
	}
	return cs
}
