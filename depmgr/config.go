// SPDX-License-Identifier: Apache-2.0

package depmgr

import (
	"errors"
	"iter"
	"slices"

	"github.com/proxyless/xds/internal/routing"
	"github.com/proxyless/xds/resources"
)

// XDSConfig is one complete, consistent configuration of a Listener: a
// snapshot (gRFC A74). It is immutable and shared: neither it nor what it
// points to may be modified. Its methods are safe for concurrent use. See
// the package doc, "Snapshots".
type XDSConfig struct {
	// Listener is the Listener; never nil.
	Listener *resources.Listener
	// ListenerVersion is the version_info the Listener was received with
	// (see the package doc, "Snapshots").
	ListenerVersion string

	// RouteConfig is the RouteConfiguration of the Listener, fetched with
	// RDS or inline (then Listener.InlineRouteConfig); never nil.
	RouteConfig *resources.RouteConfig
	// RouteConfigVersion is the version_info the RouteConfiguration was
	// received with; "" for an inline one.
	RouteConfigVersion string

	// VirtualHost is the virtual host of RouteConfig selected for the
	// data-plane authority; it points into
	// RouteConfig.VirtualHosts; never nil.
	VirtualHost *resources.VirtualHost

	// clusters maps the name of every top-level cluster to its result;
	// see Cluster.
	clusters *clusterMap
}

// Cluster returns the result of the top-level cluster name, or nil when it
// is not one. The top-level clusters are each cluster named by a route of
// VirtualHost, and each cluster subscribed to with
// SubscribeToCluster whose subtree is complete. name must be canonical
// (resources.CanonicalName), as route actions' cluster names are once
// canonicalised.
func (c *XDSConfig) Cluster(name string) *ClusterResult { return c.clusters.get(name) }

// Clusters returns an iterator over the top-level clusters and their
// results, in no particular order. See Cluster.
func (c *XDSConfig) Clusters() iter.Seq2[string, *ClusterResult] {
	return func(yield func(string, *ClusterResult) bool) {
		for _, s := range c.clusters.shards {
			for _, r := range s.all() {
				if !yield(r.Name, r) {
					return
				}
			}
		}
	}
}

// ClusterNames returns the names of the top-level clusters, sorted, in a
// slice the caller owns.
func (c *XDSConfig) ClusterNames() []string {
	names := make([]string, 0, c.clusters.n)
	for name := range c.Clusters() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// NumClusters returns the number of top-level clusters.
func (c *XDSConfig) NumClusters() int { return c.clusters.n }

// ClusterResult is what is known of one cluster: a ClusterConfig, or the
// error that makes the cluster unusable. RPCs routed to a cluster with an
// error fail; the other clusters are not affected (gRFC A74).
type ClusterResult struct {
	// Name is the cluster name, canonical.
	Name string
	// Config is the cluster's configuration; nil when Err is set.
	Config *ClusterConfig
	// Err says why the cluster is unusable: a resource error of the
	// Cluster (the client's *client.ResourceError: it does not exist, or
	// it is invalid and no valid version was received), or an error of
	// its aggregate graph (ErrMaxDepthExceeded, ErrAggregateCycle,
	// ErrNoLeafClusters). nil when Config is set.
	Err error
}

// ClusterConfig is a cluster with what it leads to. For a leaf cluster
// (EDS or LOGICAL_DNS) that is its endpoints; for an aggregate cluster,
// its leaf clusters.
type ClusterConfig struct {
	// Name is the cluster name, canonical.
	Name string
	// Cluster is the Cluster resource; never nil.
	Cluster *resources.Cluster
	// ClusterVersion is the version_info the Cluster was received with.
	ClusterVersion string

	// Endpoints are the endpoints of a leaf cluster; never nil for a leaf,
	// nil for an aggregate cluster. For EDS, the ClusterLoadAssignment;
	// for LOGICAL_DNS, one locality (priority 0, weight 1) holding one
	// endpoint with every address resolved, as "ip:port" (gRFC A61), of
	// health HealthStatusUnknown and weight 1; its Raw is nil. Empty (no
	// localities) when ResolutionNote is set.
	Endpoints *resources.Endpoints
	// EndpointsVersion is the version_info the ClusterLoadAssignment was
	// received with; "" for LOGICAL_DNS.
	EndpointsVersion string
	// ResolutionNote says why a leaf cluster has no endpoints: a resource
	// error of its ClusterLoadAssignment, or a DNS lookup that failed
	// before any address was found. nil otherwise.
	ResolutionNote error

	// Leaves are the leaf clusters of an aggregate cluster, in priority
	// order, each once; never empty for an aggregate cluster, nil
	// for a leaf. A leaf's ClusterConfig is shared by every aggregate that
	// leads to it.
	Leaves []*ClusterConfig
	// Skipped are the clusters under an aggregate cluster that contribute
	// no leaves because they have an error, in the order met; nil when
	// there are none.
	Skipped []*ClusterResult
}

// IsAggregate reports whether c is the config of an aggregate cluster.
func (c *ClusterConfig) IsAggregate() bool {
	return c.Cluster.Kind == resources.ClusterKindAggregate
}

// Errors of the configuration built by a Manager. Errors given to a
// Manager's watcher or put in a snapshot wrap them; test with errors.Is.
var (
	// ErrNoVirtualHost is wrapped by the whole-config error reported when
	// the RouteConfiguration has no virtual host whose domains match the
	// data-plane authority (a virtual host with an invalid domain
	// pattern never matches, R-16.2).
	ErrNoVirtualHost = routing.ErrNoVirtualHost

	// ErrMaxDepthExceeded is wrapped by the error of a cluster whose
	// aggregate graph is deeper than MaxAggregateDepth.
	ErrMaxDepthExceeded = errors.New("aggregate cluster graph exceeds max depth (16)")

	// ErrAggregateCycle is wrapped by the error of a cluster whose
	// aggregate graph has a cycle; the message names the cycle.
	ErrAggregateCycle = errors.New("aggregate cluster cycle")

	// ErrNoLeafClusters is wrapped by the error of an aggregate cluster
	// none of whose descendants is a usable leaf cluster.
	ErrNoLeafClusters = errors.New("aggregate cluster graph has no leaf clusters")

	// ErrServerListener is wrapped by the whole-config error reported
	// when the Listener is a server-side Listener (gRFC A36: it has no
	// api_listener, which a gRPC client needs; package server serves
	// such Listeners), at once, rather than after the RouteConfiguration
	// it does not name fails to arrive.
	ErrServerListener = errors.New("server-side Listener (no api_listener): a gRPC client cannot use it")
)

// MaxAggregateDepth is the number of levels an aggregate cluster graph may
// have, the top-level cluster being level 0 (R-16.5, as every gRPC client).
const MaxAggregateDepth = 16
