// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	grpccreds "google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcxdscreds "google.golang.org/grpc/credentials/xds"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/certs"
	"github.com/proxyless/xds/xdscreds"
	"github.com/proxyless/xds/xdsresolver"

	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// serverTemplate is the server_listener_resource_name_template of the
// servers' bootstrap.
const serverTemplate = "grpc/server?xds.resource.listening_address=%s"

// idService answers UnaryCall with the server's ID and the client's
// SPIFFE ID.
type idService struct {
	testgrpc.UnimplementedTestServiceServer
	id string
}

func (s idService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	resp := &testgrpc.SimpleResponse{ServerId: s.id}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(grpccreds.TLSInfo); ok && info.SPIFFEID != nil {
			resp.Username = info.SPIFFEID.String()
		}
	}
	return resp, nil
}

func (s idService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

// xdsServer is what the test needs of an xDS-enabled server: ours
// (server.GRPCServer) or grpc-go's (xds.GRPCServer).
type xdsServer interface {
	grpc.ServiceRegistrar
	Serve(net.Listener) error
	Stop()
}

// serveXDS serves idService{id} on a loopback port with srv, stopped in
// t.Cleanup, and returns its address.
func serveXDS(t *testing.T, srv xdsServer, id string) *net.TCPAddr {
	t.Helper()
	testgrpc.RegisterTestServiceServer(srv, idService{id: id})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().(*net.TCPAddr)
}

// serverOutcome is what the test compares of an RPC to a server.
type serverOutcome struct {
	Code     codes.Code
	ServerID string
	Client   string // the client's SPIFFE ID the server saw
}

// TestServer_SideBySide_GRPCGo serves one go-control-plane configuration
// to two xDS-enabled servers, this library's (package server, with
// package xdscreds) and grpc-go's (xds.NewGRPCServer, with
// credentials/xds), each with the Listener of its address: mTLS from the
// bootstrap's file_watcher instance "mesh", an RBAC filter allowing only
// the SPIFFE ID of the mesh's client, and routes whose UnaryCall route is
// non_forwarding_action and whose EmptyCall route forwards to a cluster.
// Two xDS clients, this library's (xdsresolver and xdscreds) and
// grpc-go's, each with two identities (the allowed client, an
// intruder), call both servers through Clusters whose UpstreamTlsContext
// accepts the mesh's server identity, and a third Cluster without a
// client certificate; the outcomes must be the same (gRFC A36, A29, A41):
//   - the allowed client: UnaryCall succeeds and the server saw its ID;
//     EmptyCall fails with UNAVAILABLE (not a non-forwarding route);
//   - the intruder: UnaryCall fails with PERMISSION_DENIED;
//   - no client certificate: the handshake fails, UNAVAILABLE.
func TestServer_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	mesh, err := certs.NewMesh(t.TempDir(), "mesh.example")
	if err != nil {
		t.Fatal(err)
	}
	intruderDir := t.TempDir()
	intruder, err := mesh.CA.Issue(certs.Options{SPIFFEID: mesh.ID("intruder")})
	if err != nil {
		t.Fatal(err)
	}
	if err := intruder.WriteFiles(intruderDir+"/cert.pem", intruderDir+"/key.pem"); err != nil {
		t.Fatal(err)
	}
	s := startGCPServer(t)
	base := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, s.Addr, nodeID)
	withMesh := func(cert, key string) []byte {
		b, err := testutil.WithCertificateProviders([]byte(base), map[string]testutil.FileWatcher{
			"mesh": {CertificateFile: cert, PrivateKeyFile: key, CACertificateFile: mesh.CAFile},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	serverBootstrap, err := testutil.WithServerListenerTemplate(withMesh(mesh.ServerCertFile, mesh.ServerKeyFile), serverTemplate)
	if err != nil {
		t.Fatal(err)
	}

	// The two servers.
	ourServerClient := newClientFromJSON(t, serverBootstrap)
	ourCreds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	ourServing, theirServing := make(chan struct{}), make(chan struct{})
	ours, err := server.NewGRPCServer(ourServerClient, server.WithServerOptions(grpc.Creds(ourCreds)),
		server.WithServingModeCallback(func(_ net.Addr, mode server.ServingMode, _ error) {
			if mode == server.ServingModeServing {
				close(ourServing)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	ourAddr := serveXDS(t, ours, "proxyless")
	theirCreds, err := grpcxdscreds.NewServerCredentials(grpcxdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := grpcxds.NewGRPCServer(grpc.Creds(theirCreds), grpcxds.BootstrapContentsForTesting(serverBootstrap),
		grpcxds.ServingModeCallback(func(_ net.Addr, args grpcxds.ServingModeChangeArgs) {
			if args.Mode == connectivity.ServingModeServing {
				close(theirServing)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	theirAddr := serveXDS(t, theirs, "grpc-go")

	// The configuration: a server Listener per server, and for each a
	// client Listener with an mTLS Cluster and a Cluster without a
	// client certificate.
	routes := testutil.ServerRouteConfig("server-routes")
	vh := routes.VirtualHosts[0]
	vh.Routes[0].Match.PathSpecifier = &v3routepb.RouteMatch_Path{Path: "/grpc.testing.TestService/UnaryCall"}
	vh.Routes = append(vh.Routes, &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "elsewhere"}}},
	})
	chain := testutil.ServerFilterChain(testutil.FilterChainOptions{
		RouteConfigName: "server-routes",
		HTTPFilters:     []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"client": {mesh.ID("client")}}))},
		TLS:             testutil.DownstreamTLS(testutil.DownstreamTLSOptions{IdentityInstance: "mesh", RootInstance: "mesh", RequireClientCertificate: true}),
	})
	res := testutil.Resources{Routes: []*v3routepb.RouteConfiguration{routes}}
	for _, addr := range []*net.TCPAddr{ourAddr, theirAddr} {
		res.Listeners = append(res.Listeners, testutil.ServerListener(bootstrap.ExpandTemplate(serverTemplate, addr.String()), addr.String(), chain))
	}
	add := func(name string, port int, tls testutil.UpstreamTLSOptions) {
		r := testutil.Chain(testutil.ChainOptions{Listener: name, Ports: []uint32{uint32(port)}})
		testutil.WithUpstreamTLS(r.Clusters[0], tls)
		res.Listeners, res.Routes = append(res.Listeners, r.Listeners...), append(res.Routes, r.Routes...)
		res.Clusters, res.Endpoints = append(res.Clusters, r.Clusters...), append(res.Endpoints, r.Endpoints...)
	}
	san := []*v3matcherpb.StringMatcher{testutil.ExactSAN(mesh.ID("backend"))}
	for name, port := range map[string]int{"proxyless": ourAddr.Port, "grpc-go": theirAddr.Port} {
		add(name, port, testutil.UpstreamTLSOptions{RootInstance: "mesh", IdentityInstance: "mesh", SubjectAltNames: san})
		add(name+"-nocert", port, testutil.UpstreamTLSOptions{RootInstance: "mesh", SubjectAltNames: san})
	}
	s.setSnapshot(ctx, t, "1", res)
	for _, serving := range []chan struct{}{ourServing, theirServing} {
		select {
		case <-serving:
		case <-ctx.Done():
			t.Fatal("a server did not start serving")
		}
	}

	// The clients: ours and grpc-go's, with the client's and the
	// intruder's certificates.
	type xdsClient struct {
		name     string
		resolver grpcresolver.Builder
		creds    grpccreds.TransportCredentials
	}
	ourClientCreds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	theirClientCreds, err := grpcxdscreds.NewClientCredentials(grpcxdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	clientsOf := func(identity string, b []byte) []xdsClient {
		theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting(b)
		if err != nil {
			t.Fatal(err)
		}
		return []xdsClient{
			{"proxyless/xds client as " + identity, xdsresolver.NewBuilder(newClientFromJSON(t, b)), ourClientCreds},
			{"grpc-go client as " + identity, theirResolver, theirClientCreds},
		}
	}
	allowed := clientsOf("client", withMesh(mesh.ClientCertFile, mesh.ClientKeyFile))
	intruders := clientsOf("intruder", withMesh(intruderDir+"/cert.pem", intruderDir+"/key.pem"))

	call := func(c xdsClient, target string, empty bool) serverOutcome {
		t.Helper()
		cc, err := grpc.NewClient(target, grpc.WithResolvers(c.resolver), grpc.WithTransportCredentials(c.creds))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		tc := testgrpc.NewTestServiceClient(cc)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		var resp *testgrpc.SimpleResponse
		if empty {
			_, err = tc.EmptyCall(rctx, &testgrpc.Empty{})
		} else {
			resp, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
		}
		if err != nil {
			t.Logf("%s -> %s: %v", c.name, target, err)
		}
		return serverOutcome{Code: status.Code(err), ServerID: resp.GetServerId(), Client: resp.GetUsername()}
	}
	for _, srv := range []string{"proxyless", "grpc-go"} {
		target := "xds:///" + srv
		for _, c := range allowed {
			if got, want := call(c, target, false), (serverOutcome{Code: codes.OK, ServerID: srv, Client: mesh.ID("client")}); got != want {
				t.Errorf("%s -> %s server: UnaryCall %+v, want %+v", c.name, srv, got, want)
			}
			if got := call(c, target, true); got.Code != codes.Unavailable {
				t.Errorf("%s -> %s server: EmptyCall %+v, want UNAVAILABLE", c.name, srv, got)
			}
			if got := call(c, target+"-nocert", false); got.Code != codes.Unavailable {
				t.Errorf("%s -> %s server without a client certificate: %+v, want UNAVAILABLE", c.name, srv, got)
			}
		}
		for _, c := range intruders {
			if got := call(c, target, false); got.Code != codes.PermissionDenied {
				t.Errorf("%s -> %s server: UnaryCall %+v, want PERMISSION_DENIED", c.name, srv, got)
			}
		}
	}
}

// newClientFromJSON returns a client of the proxyless/xds library with
// the bootstrap js, closed in t.Cleanup.
func newClientFromJSON(t *testing.T, js []byte) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(js)
	if err != nil {
		t.Fatalf("bootstrap.Parse(%s): %v", js, err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
