// SPDX-License-Identifier: Apache-2.0

package xdsbuild

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/mgmtserver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// The builders return fresh messages the caller owns and may modify. Their
// output passes gRPC's validation (the decoders of package resources).

// MarshalAny returns m packed in an Any, marshalled deterministically, so
// two calls with equal messages give equal Anys (proto.Equal). It is a
// builder for messages a test constructs: it panics if m cannot be
// marshalled (a string field that is not UTF-8), which fails the test
// with the message. Update reports such a resource as an error instead.
func MarshalAny(m proto.Message) *anypb.Any {
	a, err := marshalAny(m)
	if err != nil {
		panic(err.Error())
	}
	return a
}

// marshalAny is MarshalAny returning the error.
func marshalAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, fmt.Errorf("xdsbuild: marshalling %T: %w", m, err)
	}
	return a, nil
}

// Listener returns a client-side (API) Listener named name whose
// api_listener is an HttpConnectionManager that fetches the
// RouteConfiguration routeConfigName over ADS (rds, config_source ads),
// with the router as its only HTTP filter.
func Listener(name, routeConfigName string) *v3listenerpb.Listener {
	return apiListener(name, &v3httppb.HttpConnectionManager{
		RouteSpecifier: &v3httppb.HttpConnectionManager_Rds{Rds: &v3httppb.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeConfigName,
		}},
	})
}

// ListenerInline is Listener with rc inlined in the HttpConnectionManager
// (route_config) instead of fetched with RDS.
func ListenerInline(name string, rc *v3routepb.RouteConfiguration) *v3listenerpb.Listener {
	return apiListener(name, &v3httppb.HttpConnectionManager{
		RouteSpecifier: &v3httppb.HttpConnectionManager_RouteConfig{RouteConfig: rc},
	})
}

func apiListener(name string, hcm *v3httppb.HttpConnectionManager) *v3listenerpb.Listener {
	hcm.HttpFilters = []*v3httppb.HttpFilter{{
		Name:       "router",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: MarshalAny(&v3routerpb.Router{})},
	}}
	return &v3listenerpb.Listener{
		Name:        name,
		ApiListener: &v3listenerpb.ApiListener{ApiListener: MarshalAny(hcm)},
	}
}

// RouteConfig returns a RouteConfiguration named name with one virtual
// host, matching the domain domain ("*" matches every authority), with one
// route: every path (prefix "") to the cluster cluster.
func RouteConfig(name, domain, cluster string) *v3routepb.RouteConfiguration {
	return &v3routepb.RouteConfiguration{
		Name: name,
		VirtualHosts: []*v3routepb.VirtualHost{{
			Name:    name + "-vh",
			Domains: []string{domain},
			Routes: []*v3routepb.Route{{
				Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
					ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: cluster},
				}},
			}},
		}},
	}
}

// Cluster returns an EDS Cluster named name whose endpoints come over ADS
// (eds_config ads) under the EDS service name edsServiceName; "" leaves
// service_name unset, so the endpoints are those named name. The load
// balancing policy is ROUND_ROBIN.
func Cluster(name, edsServiceName string) *v3clusterpb.Cluster {
	return &v3clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_EDS},
		EdsClusterConfig: &v3clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   adsConfigSource(),
			ServiceName: edsServiceName,
		},
		LbPolicy: v3clusterpb.Cluster_ROUND_ROBIN,
	}
}

// Endpoints returns a ClusterLoadAssignment for clusterName (a cluster
// name or EDS service name) with one locality (empty locality ID, weight
// 1, priority 0) holding one HEALTHY endpoint host:port per port, in
// order. With no ports the locality has no endpoints.
func Endpoints(clusterName, host string, ports ...uint32) *v3endpointpb.ClusterLoadAssignment {
	lbEndpoints := make([]*v3endpointpb.LbEndpoint, 0, len(ports))
	for _, port := range ports {
		lbEndpoints = append(lbEndpoints, &v3endpointpb.LbEndpoint{
			HostIdentifier: &v3endpointpb.LbEndpoint_Endpoint{Endpoint: &v3endpointpb.Endpoint{
				Address: &v3corepb.Address{Address: &v3corepb.Address_SocketAddress{SocketAddress: &v3corepb.SocketAddress{
					Protocol:      v3corepb.SocketAddress_TCP,
					Address:       host,
					PortSpecifier: &v3corepb.SocketAddress_PortValue{PortValue: port},
				}}},
			}},
			HealthStatus: v3corepb.HealthStatus_HEALTHY,
		})
	}
	return &v3endpointpb.ClusterLoadAssignment{
		ClusterName: clusterName,
		Endpoints: []*v3endpointpb.LocalityLbEndpoints{{
			Locality:            &v3corepb.Locality{},
			LbEndpoints:         lbEndpoints,
			LoadBalancingWeight: wrapperspb.UInt32(1),
			Priority:            0,
		}},
	}
}

func adsConfigSource() *v3corepb.ConfigSource {
	return &v3corepb.ConfigSource{
		ConfigSourceSpecifier: &v3corepb.ConfigSource_Ads{Ads: &v3corepb.AggregatedConfigSource{}},
		ResourceApiVersion:    v3corepb.ApiVersion_V3,
	}
}

// ChainOptions configures Chain. The zero value is a valid chain for the
// listener "svc" with one endpoint, 127.0.0.1:8080.
type ChainOptions struct {
	// Listener is the Listener name, from which the other names derive.
	// Default "svc".
	Listener string
	// Host is the endpoints' host. Default "127.0.0.1".
	Host string
	// Ports are the endpoints' ports, one endpoint each. Default [8080].
	Ports []uint32
}

// Chain returns a snapshot with one valid Listener → RouteConfiguration →
// Cluster → ClusterLoadAssignment chain, for L = o.Listener:
//
//	Listener(L, "route-"+L)
//	RouteConfig("route-"+L, L, "cluster-"+L)
//	Cluster("cluster-"+L, "eds-"+L)
//	Endpoints("eds-"+L, o.Host, o.Ports...)
//
// Its Version is "" (the server picks one).
func Chain(o ChainOptions) mgmtserver.Resources {
	l, host, ports := o.Listener, o.Host, o.Ports
	if l == "" {
		l = "svc"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if len(ports) == 0 {
		ports = []uint32{8080}
	}
	return mgmtserver.Resources{
		Listeners: []*v3listenerpb.Listener{Listener(l, "route-"+l)},
		Routes:    []*v3routepb.RouteConfiguration{RouteConfig("route-"+l, l, "cluster-"+l)},
		Clusters:  []*v3clusterpb.Cluster{Cluster("cluster-"+l, "eds-"+l)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{Endpoints("eds-"+l, host, ports...)},
	}
}
