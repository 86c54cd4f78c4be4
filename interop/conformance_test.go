// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcplog "github.com/envoyproxy/go-control-plane/pkg/log"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/transporttest"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"
	"github.com/proxyless/xds/transport/pertype"
	"github.com/proxyless/xds/transport/rest"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
)

// gcpMode is the way a gcpHarness reaches go-control-plane's server.
type gcpMode int

const (
	gcpPerTypeSotW gcpMode = iota
	gcpPerTypeDelta
	gcpREST
)

// gcpHarness is the transporttest.Harness of go-control-plane v0.14's
// server with a snapshot cache: its per-type gRPC services (SotW or delta,
// through transport/pertype) or its REST gateway (through transport/rest).
// Requests are recorded through the server's callbacks; Break closes the
// gRPC connections (transporttest.BreakingListener) or fails the next
// poll (transporttest.BreakingHandler).
type gcpHarness struct{ mode gcpMode }

// TestConformance_GoControlPlane runs the transport conformance suite
// against go-control-plane's per-type services and REST gateway.
func TestConformance_GoControlPlane(t *testing.T) {
	for _, v := range []struct {
		name string
		mode gcpMode
	}{
		{"PerType_SotW", gcpPerTypeSotW},
		{"PerType_Delta", gcpPerTypeDelta},
		{"REST", gcpREST},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			transporttest.Run(t, gcpHarness{v.mode})
		})
	}
}

// gcpExplicitWildcard is why gcpHarness does not support, in SotW, the
// cells that subscribe to the wildcard as "*".
const gcpExplicitWildcard = "go-control-plane v0.14's snapshot cache answers a SotW request (or REST-JSON poll) that lists names with those names only, \"*\" taken for a name: only the legacy wildcard (an empty list) is served"

func (h gcpHarness) Features() transporttest.Features {
	f := transporttest.Features{
		Delta: h.mode == gcpPerTypeDelta,
		Unsupported: map[string]string{
			transporttest.CellDuplicateNames: "go-control-plane's snapshot cache holds one resource per name: it cannot send a name twice",
		},
	}
	if h.mode != gcpPerTypeDelta {
		// "*" goes on the wire: for RouteConfiguration and
		// ClusterLoadAssignment always (the legacy form is not defined
		// for them), for every type when the wildcard is added to names.
		for _, cell := range []string{
			"Wildcard/RouteConfiguration", "Wildcard/ClusterLoadAssignment",
			"ReconnectReplay/RouteConfiguration", "ReconnectReplay/ClusterLoadAssignment",
			transporttest.CellWildcardAndNamed, transporttest.CellCancelAndRewatch,
		} {
			f.Unsupported[cell] = gcpExplicitWildcard
		}
	}
	return f
}

func (h gcpHarness) NewServer(t *testing.T) transporttest.Server {
	log := transporttest.NewLog()
	callbacks := gcpserver.CallbackFuncs{
		StreamRequestFunc: func(id int64, req *v3discoverypb.DiscoveryRequest) error {
			log.Record(&testutil.Request{StreamID: id, Node: req.GetNode(), Req: proto.Clone(req).(*v3discoverypb.DiscoveryRequest)})
			return nil
		},
		StreamDeltaRequestFunc: func(id int64, req *v3discoverypb.DeltaDiscoveryRequest) error {
			log.Record(&testutil.Request{StreamID: id, Node: req.GetNode(), Delta: proto.Clone(req).(*v3discoverypb.DeltaDiscoveryRequest)})
			return nil
		},
		FetchRequestFunc: func(_ context.Context, req *v3discoverypb.DiscoveryRequest) error {
			log.Record(&testutil.Request{Node: req.GetNode(), Req: proto.Clone(req).(*v3discoverypb.DiscoveryRequest)})
			return nil
		},
	}
	s := &gcpConformanceServer{
		mode:  h.mode,
		log:   log,
		cache: gcpcache.NewSnapshotCache(false, gcpcache.IDHash{}, gcplog.LoggerFuncs{}),
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	t.Cleanup(cancel) // runs last: after the servers below stopped
	xds := gcpserver.NewServer(ctx, s.cache, callbacks)
	s.SetResources(t, testutil.Resources{Version: "v0"})

	if h.mode == gcpREST {
		gw := &gcpserver.HTTPGateway{Server: xds}
		s.breakHandler = &transporttest.BreakingHandler{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, code, err := gw.ServeHTTP(r)
			if err != nil {
				http.Error(w, err.Error(), code)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write(b)
		})}
		hs := httptest.NewServer(s.breakHandler)
		t.Cleanup(hs.Close)
		s.uri = hs.URL
		return s
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	s.listener = transporttest.NewBreakingListener(lis)
	s.uri = lis.Addr().String()
	gs := grpc.NewServer(grpc.WaitForHandlers(true))
	v3listenerpb.RegisterListenerDiscoveryServiceServer(gs, xds)
	v3routepb.RegisterRouteDiscoveryServiceServer(gs, xds)
	v3clusterpb.RegisterClusterDiscoveryServiceServer(gs, xds)
	v3endpointpb.RegisterEndpointDiscoveryServiceServer(gs, xds)
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(s.listener) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-serveDone; err != nil {
			t.Errorf("grpc.Server.Serve: %v", err)
		}
	})
	return s
}

// gcpConformanceServer is a transporttest.Server of gcpHarness.
type gcpConformanceServer struct {
	mode         gcpMode
	log          *transporttest.Log
	cache        gcpcache.SnapshotCache
	uri          string                          // the gRPC address or the REST base URL
	listener     *transporttest.BreakingListener // per-type modes
	breakHandler *transporttest.BreakingHandler  // gcpREST
}

func (s *gcpConformanceServer) NewClient(t *testing.T, o transporttest.ClientOptions) *client.Client {
	t.Helper()
	if s.mode == gcpREST {
		b := rest.NewBuilder(rest.WithInterval(transporttest.RESTInterval), rest.WithMaxResponseBytes(int64(o.MaxResponseBytes)))
		return transporttest.NewClient(t, s.uri, b, o)
	}
	var gopts []grpctransport.Option
	if o.MaxResponseBytes > 0 {
		gopts = append(gopts, grpctransport.WithMaxRecvMsgSize(o.MaxResponseBytes))
	}
	var b transport.Builder = pertype.NewBuilder(grpctransport.NewBuilder(gopts...))
	var extra []client.Option
	if s.mode == gcpPerTypeDelta {
		extra = append(extra, client.WithDelta())
	}
	return transporttest.NewClient(t, s.uri, b, o, extra...)
}

func (s *gcpConformanceServer) SetResources(t *testing.T, r testutil.Resources) {
	t.Helper()
	snap, err := gcpcache.NewSnapshot(r.Version, map[gcpresource.Type][]gcptypes.Resource{
		gcpresource.ListenerType: toResources(r.Listeners),
		gcpresource.RouteType:    toResources(r.Routes),
		gcpresource.ClusterType:  toResources(r.Clusters),
		gcpresource.EndpointType: toResources(r.Endpoints),
	})
	if err != nil {
		t.Fatalf("gcpcache.NewSnapshot(%q): %v", r.Version, err)
	}
	if err := s.cache.SetSnapshot(t.Context(), transporttest.NodeID, snap); err != nil {
		t.Fatalf("SetSnapshot(%q): %v", r.Version, err)
	}
}

func (s *gcpConformanceServer) Break(*testing.T) {
	if s.mode == gcpREST {
		s.breakHandler.Break()
		return
	}
	s.listener.Break()
}

func (s *gcpConformanceServer) Requests() transporttest.RequestLog { return s.log }
