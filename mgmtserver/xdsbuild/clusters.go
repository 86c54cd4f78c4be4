// SPDX-License-Identifier: Apache-2.0

package xdsbuild

import (
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3aggregateclusterpb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
)

// Builders for the other cluster kinds of gRFC A37 and for route
// configurations with many routes, for tests of the dependency manager
// (gRFC A74). Like those of builders.go, they return fresh messages the
// caller owns, and their output passes the decoders of package resources.

// LogicalDNSCluster returns a LOGICAL_DNS Cluster named name whose single
// endpoint is host:port, to be resolved with DNS (gRFC A37): its
// load_assignment holds one locality with one endpoint. The load
// balancing policy is ROUND_ROBIN. port must not be 0.
func LogicalDNSCluster(name, host string, port uint32) *v3clusterpb.Cluster {
	return &v3clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_LOGICAL_DNS},
		LbPolicy:             v3clusterpb.Cluster_ROUND_ROBIN,
		LoadAssignment: &v3endpointpb.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*v3endpointpb.LocalityLbEndpoints{{
				LbEndpoints: []*v3endpointpb.LbEndpoint{{
					HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
						Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
							Address:       host,
							PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
						}}},
					}},
				}},
			}},
		},
	}
}

// AggregateCluster returns an aggregate Cluster named name (cluster_type
// envoy.clusters.aggregate, gRFC A37) of children, highest priority first.
// children must not be empty. lb_policy is left unset (ROUND_ROBIN), as
// gRPC ignores it for aggregate clusters.
func AggregateCluster(name string, children ...string) *v3clusterpb.Cluster {
	return &v3clusterpb.Cluster{
		Name: name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_ClusterType{ClusterType: &v3clusterpb.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: MarshalAny(&v3aggregateclusterpb.ClusterConfig{Clusters: children}),
		}},
	}
}

// ClusterWeight is one cluster of WeightedClustersRoute.
type ClusterWeight struct {
	// Name is the cluster name.
	Name string
	// Weight is the cluster's weight; it must not be 0.
	Weight uint32
}

// ClusterRoute returns a route that sends every RPC whose path starts with
// prefix ("" matches every path) to cluster.
func ClusterRoute(prefix, cluster string) *v3routepb.Route {
	return &v3routepb.Route{
		Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: prefix}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
			ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: cluster},
		}},
	}
}

// WeightedClustersRoute returns a route that splits the RPCs whose path
// starts with prefix between clusters, by weight (gRFC A28). clusters must
// not be empty.
func WeightedClustersRoute(prefix string, clusters ...ClusterWeight) *v3routepb.Route {
	wc := &v3routepb.WeightedCluster{}
	for _, c := range clusters {
		wc.Clusters = append(wc.Clusters, &v3routepb.WeightedCluster_ClusterWeight{Name: c.Name, Weight: wrapperspb.UInt32(c.Weight)})
	}
	return &v3routepb.Route{
		Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: prefix}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
			ClusterSpecifier: &v3routepb.RouteAction_WeightedClusters{WeightedClusters: wc},
		}},
	}
}

// VirtualHost returns a virtual host named name for domains (exact names,
// "*.suffix", "prefix.*" or "*") with routes, in order.
func VirtualHost(name string, domains []string, routes ...*v3routepb.Route) *v3routepb.VirtualHost {
	return &v3routepb.VirtualHost{Name: name, Domains: domains, Routes: routes}
}

// RouteConfigWithVirtualHosts returns a RouteConfiguration named name with
// the virtual hosts vhs, in order.
func RouteConfigWithVirtualHosts(name string, vhs ...*v3routepb.VirtualHost) *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{Name: name, VirtualHosts: vhs}
}

// RouteConfigToClusters returns a RouteConfiguration named name with one
// virtual host for domain whose routes send the path prefix "/"+c+"/" to
// cluster c, one route per cluster in order, then a last route sending
// every other path to clusters[0]. clusters must not be empty. It is the
// route table of a large mesh (one route per service).
func RouteConfigToClusters(name, domain string, clusters ...string) *v3routepb.RouteConfiguration {
	routes := make([]*v3routepb.Route, 0, len(clusters)+1)
	for _, c := range clusters {
		routes = append(routes, ClusterRoute("/"+c+"/", c))
	}
	routes = append(routes, ClusterRoute("", clusters[0]))
	return RouteConfigWithVirtualHosts(name, VirtualHost(name+"-vh", []string{domain}, routes...))
}
