// SPDX-License-Identifier: Apache-2.0

package mgmtserver

import (
	"google.golang.org/grpc"

	"github.com/proxyless/xds/transport"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
)

// The per-type services (xDS protocol, "Variants of the xDS Transport
// Protocol", variants 1 and 2) are served by the ADS handlers: a per-type
// stream is an ADS stream that carries one type. They share the server's
// snapshots, request log, BreakStreams and RejectStreams with ADS.

type (
	sotwHandler  = grpc.BidiStreamingServer[v3discoverypb.DiscoveryRequest, v3discoverypb.DiscoveryResponse]
	deltaHandler = grpc.BidiStreamingServer[v3discoverypb.DeltaDiscoveryRequest, v3discoverypb.DeltaDiscoveryResponse]
)

// perTypeService implements the two streaming methods of every per-type
// service; the per-type types below add each service's method names.
type perTypeService struct{ ads *adsService }

func (p perTypeService) sotw(st sotwHandler) error   { return p.ads.StreamAggregatedResources(st) }
func (p perTypeService) delta(st deltaHandler) error { return p.ads.DeltaAggregatedResources(st) }

type ldsService struct {
	v3listenerpb.UnimplementedListenerDiscoveryServiceServer
	perTypeService
}

func (s ldsService) StreamListeners(st sotwHandler) error { return s.sotw(st) }
func (s ldsService) DeltaListeners(st deltaHandler) error { return s.delta(st) }

type rdsService struct {
	v3routepb.UnimplementedRouteDiscoveryServiceServer
	perTypeService
}

func (s rdsService) StreamRoutes(st sotwHandler) error { return s.sotw(st) }
func (s rdsService) DeltaRoutes(st deltaHandler) error { return s.delta(st) }

type cdsService struct {
	v3clusterpb.UnimplementedClusterDiscoveryServiceServer
	perTypeService
}

func (s cdsService) StreamClusters(st sotwHandler) error { return s.sotw(st) }
func (s cdsService) DeltaClusters(st deltaHandler) error { return s.delta(st) }

type edsService struct {
	v3endpointpb.UnimplementedEndpointDiscoveryServiceServer
	perTypeService
}

func (s edsService) StreamEndpoints(st sotwHandler) error { return s.sotw(st) }
func (s edsService) DeltaEndpoints(st deltaHandler) error { return s.delta(st) }

// registerPerTypeServices registers LDS, RDS, CDS and EDS on s.
func registerPerTypeServices(s *grpc.Server, ads *adsService) {
	p := perTypeService{ads: ads}
	v3listenerpb.RegisterListenerDiscoveryServiceServer(s, ldsService{perTypeService: p})
	v3routepb.RegisterRouteDiscoveryServiceServer(s, rdsService{perTypeService: p})
	v3clusterpb.RegisterClusterDiscoveryServiceServer(s, cdsService{perTypeService: p})
	v3endpointpb.RegisterEndpointDiscoveryServiceServer(s, edsService{perTypeService: p})
}

// perTypeMethods maps the per-type methods to the ADS method that serves
// them in memory.
var perTypeMethods = func() map[string]string {
	m := make(map[string]string)
	for _, svc := range []struct{ pkg, service, suffix string }{
		{"listener", "ListenerDiscoveryService", "Listeners"},
		{"route", "RouteDiscoveryService", "Routes"},
		{"cluster", "ClusterDiscoveryService", "Clusters"},
		{"endpoint", "EndpointDiscoveryService", "Endpoints"},
	} {
		prefix := "/envoy.service." + svc.pkg + ".v3." + svc.service + "/"
		m[prefix+"Stream"+svc.suffix] = transport.ADSMethod
		m[prefix+"Delta"+svc.suffix] = transport.DeltaADSMethod
	}
	return m
}()
