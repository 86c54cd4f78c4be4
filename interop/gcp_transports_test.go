// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcplog "github.com/envoyproxy/go-control-plane/pkg/log"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/resources"
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

// gcpTransportServer is go-control-plane's management server with a
// snapshot cache, serving the per-type gRPC services (LDS, RDS, CDS, EDS;
// SotW and delta) and, over HTTP, its REST gateway (HTTPGateway). No ADS
// service is registered: a client that opened an ADS stream would fail.
type gcpTransportServer struct {
	GRPCAddr string // host:port of the per-type services
	RESTURL  string // http://host:port of the REST gateway
	Cache    gcpcache.SnapshotCache

	// NACKs receives the error_detail of every request that carries one,
	// SotW, delta or REST.
	NACKs chan string
	// Methods receives the gRPC method of every stream opened.
	Methods chan string
}

func startGCPTransportServer(t *testing.T) *gcpTransportServer {
	t.Helper()
	s := &gcpTransportServer{
		Cache:   gcpcache.NewSnapshotCache(false, gcpcache.IDHash{}, gcplog.NewTestLogger(t)),
		NACKs:   make(chan string, 100),
		Methods: make(chan string, 100),
	}
	nack := func(d interface{ GetMessage() string }, has bool) {
		if has {
			select {
			case s.NACKs <- d.GetMessage():
			default:
			}
		}
	}
	callbacks := gcpserver.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *v3discoverypb.DiscoveryRequest) error {
			nack(req.GetErrorDetail(), req.GetErrorDetail() != nil)
			return nil
		},
		StreamDeltaRequestFunc: func(_ int64, req *v3discoverypb.DeltaDiscoveryRequest) error {
			nack(req.GetErrorDetail(), req.GetErrorDetail() != nil)
			return nil
		},
		FetchRequestFunc: func(_ context.Context, req *v3discoverypb.DiscoveryRequest) error {
			nack(req.GetErrorDetail(), req.GetErrorDetail() != nil)
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	xds := gcpserver.NewServer(ctx, s.Cache, callbacks)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen: %v", err)
	}
	s.GRPCAddr = lis.Addr().String()
	gs := grpc.NewServer(grpc.WaitForHandlers(true), grpc.StreamInterceptor(
		func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			select {
			case s.Methods <- info.FullMethod:
			default:
			}
			return handler(srv, ss)
		}))
	v3listenerpb.RegisterListenerDiscoveryServiceServer(gs, xds)
	v3routepb.RegisterRouteDiscoveryServiceServer(gs, xds)
	v3clusterpb.RegisterClusterDiscoveryServiceServer(gs, xds)
	v3endpointpb.RegisterEndpointDiscoveryServiceServer(gs, xds)
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(lis) }()

	gw := &gcpserver.HTTPGateway{Server: xds}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, code, err := gw.ServeHTTP(r)
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write(b)
	}))
	s.RESTURL = hs.URL

	t.Cleanup(func() {
		hs.Close()
		cancel()
		gs.Stop()
		if err := <-serveDone; err != nil {
			t.Errorf("grpc.Server.Serve: %v", err)
		}
	})
	return s
}

// newClient returns a client of uri through b, closed in t.Cleanup.
func (s *gcpTransportServer) newClient(t *testing.T, uri string, b transport.Builder, opts ...client.Option) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(fmt.Appendf(nil, `{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": %q}
	}`, uri, nodeID))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, append([]client.Option{client.WithTransportBuilder(b)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// checkTransport runs the checks on a client of s: the full
// Listener → Endpoints chain arrives, a snapshot update reaches the
// endpoints watcher, and an invalid Cluster is NACKed to the server.
func checkTransport(t *testing.T, s *gcpTransportServer, c *client.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	setDeltaSnapshot(ctx, t, s.Cache, "1", chain("127.0.0.1", 50051))

	lw := newRecordingWatcher[*resources.Listener]()
	defer client.Watch(c, resources.ListenerType, listenerName, lw)()
	if l := waitForValue(ctx, t, lw); l.RouteConfigName != routeName {
		t.Fatalf("Listener routes via %q, want %q", l.RouteConfigName, routeName)
	}
	rw := newRecordingWatcher[*resources.RouteConfig]()
	defer client.Watch(c, resources.RouteConfigType, routeName, rw)()
	waitForValue(ctx, t, rw)
	cw := newRecordingWatcher[*resources.Cluster]()
	defer client.Watch(c, resources.ClusterType, clusterName, cw)()
	waitForValue(ctx, t, cw)
	ew := newRecordingWatcher[*resources.Endpoints]()
	defer client.Watch(c, resources.EndpointsType, edsName, ew)()
	if got := endpointAddrs(waitForValue(ctx, t, ew)); fmt.Sprint(got) != "[127.0.0.1:50051]" {
		t.Fatalf("endpoints %v, want [127.0.0.1:50051]", got)
	}

	setDeltaSnapshot(ctx, t, s.Cache, "2", chain("127.0.0.1", 50052))
	if _, _, err := ew.waitFor(ctx, 1, func(e watchEvent[*resources.Endpoints]) bool {
		return e.kind == changed && fmt.Sprint(endpointAddrs(e.value)) == "[127.0.0.1:50052]"
	}); err != nil {
		t.Fatalf("update: %v", err)
	}

	setDeltaSnapshot(ctx, t, s.Cache, "3", withStaticCluster(chain("127.0.0.1", 50052)))
	select {
	case msg := <-s.NACKs:
		t.Logf("server saw NACK: %s", msg)
	case <-ctx.Done():
		t.Fatal("the server saw no NACK")
	}
	if _, _, err := cw.waitFor(ctx, 1, func(e watchEvent[*resources.Cluster]) bool {
		return e.kind == ambientError && errors.Is(e.err, client.ErrResourceInvalid)
	}); err != nil {
		t.Fatalf("Cluster watcher after the invalid update: %v", err)
	}
}

// TestGoControlPlane_PerType_SotW checks variant 1 against
// go-control-plane's per-type services; no ADS stream is opened.
func TestGoControlPlane_PerType_SotW(t *testing.T) {
	s := startGCPTransportServer(t)
	c := s.newClient(t, s.GRPCAddr, pertype.NewBuilder(grpctransport.NewBuilder()))
	checkTransport(t, s, c)
	checkMethods(t, s, "/envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners")
}

// TestGoControlPlane_PerType_Delta checks variant 2 against
// go-control-plane's per-type delta services.
func TestGoControlPlane_PerType_Delta(t *testing.T) {
	s := startGCPTransportServer(t)
	c := s.newClient(t, s.GRPCAddr, pertype.NewBuilder(grpctransport.NewBuilder()), client.WithDelta())
	checkTransport(t, s, c)
	checkMethods(t, s, "/envoy.service.listener.v3.ListenerDiscoveryService/DeltaListeners")
}

// TestGoControlPlane_REST checks REST-JSON polling against
// go-control-plane's HTTP gateway.
func TestGoControlPlane_REST(t *testing.T) {
	s := startGCPTransportServer(t)
	c := s.newClient(t, s.RESTURL, rest.NewBuilder(rest.WithInterval(20*time.Millisecond)))
	checkTransport(t, s, c)
	select {
	case m := <-s.Methods:
		t.Errorf("a gRPC stream was opened: %s", m)
	default:
	}
}

// checkMethods checks that the streams opened include want and no ADS
// stream.
func checkMethods(t *testing.T, s *gcpTransportServer, want string) {
	t.Helper()
	var seen bool
	for {
		select {
		case m := <-s.Methods:
			if m == transport.ADSMethod || m == transport.DeltaADSMethod {
				t.Errorf("ADS stream opened: %s", m)
			}
			seen = seen || m == want
			continue
		default:
		}
		break
	}
	if !seen {
		t.Errorf("no %s stream opened", want)
	}
}
