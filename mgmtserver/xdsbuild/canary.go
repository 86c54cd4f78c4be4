// SPDX-License-Identifier: Apache-2.0

package xdsbuild

import (
	"github.com/proxyless/xds/mgmtserver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// CanaryOptions configures Canary.
type CanaryOptions struct {
	// Listener is the Listener name, the data-plane authority of the
	// virtual host. Default "svc".
	Listener string
	// PortA, PortB and PortC are the ports of the single endpoint
	// (127.0.0.1) of the clusters "cluster-a", "cluster-b" and
	// "cluster-c".
	PortA, PortB, PortC uint32
	// CanaryHeader is the header whose value "true" sends an RPC to
	// cluster-b. Default "x-canary".
	CanaryHeader string
	// Path is the full method name ("/pkg.Service/Method") routed to
	// cluster-c. Default "/grpc.testing.TestService/EmptyCall".
	Path string
	// WeightA and WeightB split the other RPCs between cluster-a and
	// cluster-b. Both 0 means 80 and 20.
	WeightA, WeightB uint32
	// LRSOnA sets lrs_server to self on cluster-a (gRFC A27): load
	// reports for it go to the management server.
	LRSOnA bool
}

// Canary returns a snapshot for a canary deployment of one service, the
// Listener o.Listener with three routes, in order:
//
//  1. header CanaryHeader exactly "true" → cluster-b;
//  2. path Path → cluster-c;
//  3. every other RPC → weighted_clusters cluster-a WeightA, cluster-b
//     WeightB.
//
// Each cluster is an EDS cluster (ROUND_ROBIN) whose endpoints, named
// like the cluster, are one HEALTHY endpoint 127.0.0.1:Port.
func Canary(o CanaryOptions) mgmtserver.Resources {
	if o.Listener == "" {
		o.Listener = "svc"
	}
	if o.CanaryHeader == "" {
		o.CanaryHeader = "x-canary"
	}
	if o.Path == "" {
		o.Path = "/grpc.testing.TestService/EmptyCall"
	}
	if o.WeightA == 0 && o.WeightB == 0 {
		o.WeightA, o.WeightB = 80, 20
	}
	canary := ClusterRoute("", "cluster-b")
	canary.Match.Headers = []*v3routepb.HeaderMatcher{{
		Name: o.CanaryHeader,
		HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{
			MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: "true"},
		}},
	}}
	method := ClusterRoute("", "cluster-c")
	method.Match.PathSpecifier = &v3routepb.RouteMatch_Path{Path: o.Path}
	var split []ClusterWeight
	if o.WeightA > 0 {
		split = append(split, ClusterWeight{Name: "cluster-a", Weight: o.WeightA})
	}
	if o.WeightB > 0 {
		split = append(split, ClusterWeight{Name: "cluster-b", Weight: o.WeightB})
	}
	rc := "route-" + o.Listener
	a := Cluster("cluster-a", "")
	if o.LRSOnA {
		a.LrsServer = &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
	}
	return mgmtserver.Resources{
		Listeners: []*v3listenerpb.Listener{Listener(o.Listener, rc)},
		Routes: []*v3routepb.RouteConfiguration{RouteConfigWithVirtualHosts(rc,
			VirtualHost(rc+"-vh", []string{o.Listener}, canary, method, WeightedClustersRoute("", split...)))},
		Clusters: []*v3clusterpb.Cluster{a, Cluster("cluster-b", ""), Cluster("cluster-c", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			Endpoints("cluster-a", "127.0.0.1", o.PortA),
			Endpoints("cluster-b", "127.0.0.1", o.PortB),
			Endpoints("cluster-c", "127.0.0.1", o.PortC),
		},
	}
}
