// SPDX-License-Identifier: Apache-2.0

package xdsresolver

import (
	"google.golang.org/grpc/resolver"

	"github.com/proxyless/xds/resources"
)

// EndpointInfo is what the resolver knows of one endpoint: where it comes
// from in the xDS configuration. Every resolver.Endpoint the router gives
// an endpoint policy (round_robin, ring_hash, ...) carries one in its
// Attributes; read it with EndpointInfoFromEndpoint. It is comparable,
// and compared with == when grpc compares attributes.
type EndpointInfo struct {
	// Cluster is the cluster the endpoint belongs to, canonical: the leaf
	// (EDS or LOGICAL_DNS) cluster, whose balancers the router shares
	// between the routes and aggregate clusters that lead to it.
	Cluster string
	// Locality is the endpoint's locality.
	Locality resources.LocalityID
	// Priority is the priority of the locality, 0 being the highest.
	Priority uint32
	// LocalityWeight is the locality's load_balancing_weight, ≥ 1.
	LocalityWeight uint32
	// Weight is the endpoint's load_balancing_weight, ≥ 1.
	Weight uint32
	// HealthStatus is the health status the management server sent:
	// HealthStatusHealthy or HealthStatusUnknown, the only ones that make
	// an endpoint usable.
	HealthStatus resources.HealthStatus
	// Hostname is the endpoint's hostname, "" if unset; for a LOGICAL_DNS
	// cluster its DNS name and port (gRFC A81).
	Hostname string
}

// endpointInfoKey is the attribute key of EndpointInfo.
type endpointInfoKey struct{}

// EndpointInfoFromEndpoint returns the EndpointInfo the resolver attached
// to ep, and false if ep has none (it did not come from this resolver).
func EndpointInfoFromEndpoint(ep resolver.Endpoint) (EndpointInfo, bool) {
	info, ok := ep.Attributes.Value(endpointInfoKey{}).(EndpointInfo)
	return info, ok
}

// setEndpointInfo returns ep with info in its attributes.
func setEndpointInfo(ep resolver.Endpoint, info EndpointInfo) resolver.Endpoint {
	ep.Attributes = ep.Attributes.WithValue(endpointInfoKey{}, info)
	return ep
}
