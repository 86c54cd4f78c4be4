// SPDX-License-Identifier: Apache-2.0

package server_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3rbacconfigpb "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/server"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/xdsbackend"
)

// End-to-end tests of the xDS-enabled server (gRFC A36, A29, A41; R-26):
// the testutil management server sends the server's Listener, a real
// grpc.Server serves loopback connections, and gRPC clients call it.

// plainListener is the Listener of ts with one plaintext chain and
// filters before the router.
func plainListener(ts *testServer, filters ...*v3listenerpb.FilterChain) *v3listenerpb.Listener {
	if len(filters) == 0 {
		filters = []*v3listenerpb.FilterChain{testutil.ServerFilterChain(testutil.FilterChainOptions{})}
	}
	return testutil.ServerListener(ts.name(), ts.addr, filters...)
}

// mtlsChain is a chain requiring a client certificate of the mesh, with
// the RBAC filter rules (nil: none).
func mtlsChain(rules *v3rbacconfigpb.RBAC) *v3listenerpb.FilterChain {
	o := testutil.FilterChainOptions{TLS: testutil.DownstreamTLS(testutil.DownstreamTLSOptions{
		IdentityInstance: "server", RootInstance: "server", RequireClientCertificate: true,
	})}
	if rules != nil {
		o.HTTPFilters = append(o.HTTPFilters, testutil.RBACFilter("rbac", rules))
	}
	return testutil.ServerFilterChain(o)
}

// TestServer_ServingModes checks the serving modes (gRFC A36, R-26.5):
//  1. before its Listener arrives, the server refuses RPCs;
//  2. the Listener arrives: SERVING, and RPCs succeed;
//  3. a NACKed update keeps the Listener: still SERVING;
//  4. the Listener is deleted: NOT_SERVING with a not-found error, and
//     RPCs fail;
//  5. it comes back: SERVING again.
func TestServer_ServingModes(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	tc := dial(t, ts.addr, insecure.NewCredentials())

	_, err := call(t, tc)
	wantCode(t, err, codes.Unavailable)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	if _, err := callReady(t, tc); err != nil {
		t.Fatalf("RPC while serving: %v", err)
	}

	bad := plainListener(ts)
	bad.UseOriginalDst = wrapperspb.Bool(true) // NACKed
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{bad}})
	ts.noModeChange(t)
	if _, err := call(t, tc); err != nil {
		t.Fatalf("RPC after a NACKed update: %v", err)
	}

	e.update(t, testutil.Resources{})
	mc := ts.waitMode(t, server.ServingModeNotServing)
	if !errors.Is(mc.err, client.ErrResourceNotFound) {
		t.Errorf("NOT_SERVING error = %v, want one wrapping client.ErrResourceNotFound", mc.err)
	}
	waitForCode(t, tc, codes.Unavailable)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	if _, err := callReady(t, tc); err != nil {
		t.Fatalf("RPC when serving again: %v", err)
	}
}

// TestServer_WrongListener checks that a Listener of another address, or
// a client-side Listener under the server's name, makes the server not
// serving, with the reason (gRFC A36, R-26.5).
func TestServer_WrongListener(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.ServerListener(ts.name(), "127.0.0.2:1", testutil.ServerFilterChain(testutil.FilterChainOptions{}))}})
	mc := ts.waitMode(t, server.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "is not the listening address") {
		t.Errorf("NOT_SERVING error = %v, want one about the address", mc.err)
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts)}})
	ts.waitMode(t, server.ServingModeServing)
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{testutil.Listener(ts.name(), "routes")}})
	mc = ts.waitMode(t, server.ServingModeNotServing)
	if mc.err == nil || !strings.Contains(mc.err.Error(), "client-side Listener") {
		t.Errorf("NOT_SERVING error = %v, want one about a client-side Listener", mc.err)
	}
}

// TestServer_MTLSAndRBAC checks server mTLS and RBAC by SPIFFE identity
// (gRFC A29, A41): the allowed identity succeeds, another gets
// PERMISSION_DENIED, a client without a certificate fails the handshake.
func TestServer_MTLSAndRBAC(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	allowed := e.mesh.ID("client")
	rules := testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"allow-client": {allowed}})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{plainListener(ts, mtlsChain(rules))}})
	ts.waitMode(t, server.ServingModeServing)

	resp, err := call(t, dial(t, ts.addr, e.clientTLS(e.mesh.Client)))
	if err != nil {
		t.Fatalf("RPC of the allowed identity: %v", err)
	}
	if resp.GetUsername() != allowed {
		t.Errorf("the server saw %q, want %q", resp.GetUsername(), allowed)
	}

	_, err = call(t, dial(t, ts.addr, e.clientTLS(e.issue(t, e.mesh.ID("intruder")))))
	wantCode(t, err, codes.PermissionDenied)

	_, err = call(t, dial(t, ts.addr, e.clientTLS(nil)))
	wantCode(t, err, codes.Unavailable)

	// A plaintext client cannot talk to a TLS chain either.
	_, err = call(t, dial(t, ts.addr, insecure.NewCredentials()))
	wantCode(t, err, codes.Unavailable)
}

// TestServer_IstioInbound serves, with the xdsbackend helper and under
// Istio's name template, the inbound Listener in the shape Istio's gRPC
// generator sends a proxyless workload in STRICT mTLS with an
// AuthorizationPolicy: it is ACKed, the allowed client
// succeeds, the denied one and one no policy allows get
// PERMISSION_DENIED.
func TestServer_IstioInbound(t *testing.T) {
	e := newEnvWith(t, "default", testutil.IstioInboundListenerPrefix+"%s")
	b, err := xdsbackend.Start(e.c, xdsbackend.Options{ServerOptions: []server.Option{
		server.WithServerOptions(grpc.Creds(serverCreds(t))),
		server.WithLogger(testLogger(t)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	lis := testutil.IstioInboundListener(b.Address, testutil.IstioInboundOptions{
		Deny:  []string{e.mesh.ID("evil")},
		Allow: []string{e.mesh.ID("client")},
	})
	if lis.GetName() != b.Name(testutil.IstioInboundListenerPrefix+"%s") {
		t.Fatalf("Listener name %q, want the backend's %q", lis.GetName(), b.Name(testutil.IstioInboundListenerPrefix+"%s"))
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	if err := b.WaitForMode(ctx, server.ServingModeServing); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.ms.Requests() {
		if r.Req.GetErrorDetail() != nil {
			t.Fatalf("the client NACKed: %v", r.Req.GetErrorDetail())
		}
	}

	resp, err := callReady(t, dial(t, b.Address, e.clientTLS(e.mesh.Client)))
	if err != nil {
		t.Fatalf("RPC of the allowed client: %v", err)
	}
	if resp.GetUsername() != e.mesh.ID("client") || resp.GetServerId() != b.ID {
		t.Errorf("response %v, want username %q from %q", resp, e.mesh.ID("client"), b.ID)
	}
	_, err = call(t, dial(t, b.Address, e.clientTLS(e.issue(t, e.mesh.ID("evil")))))
	wantCode(t, err, codes.PermissionDenied)
	_, err = call(t, dial(t, b.Address, e.clientTLS(e.issue(t, e.mesh.ID("stranger")))))
	wantCode(t, err, codes.PermissionDenied)
}

// TestServer_RoutesOverRDS checks routes on the server (gRFC A36, R-26.7),
// on a delta stream, which tells a resource does not exist at once:
//  1. a chain whose RouteConfiguration does not exist: the server serves,
//     and its RPCs fail with UNAVAILABLE;
//  2. the RouteConfiguration arrives: a route with non_forwarding_action
//     serves the next RPC of the same channel; a route of another action
//     and a path no route matches fail with UNAVAILABLE;
//  3. an RDS update that adds an RBACPerRoute denying everyone applies
//     to the next RPC of the existing connection;
//  4. the RouteConfiguration deleted: RPCs fail with UNAVAILABLE, the
//     server stays SERVING.
func TestServer_RoutesOverRDS(t *testing.T) {
	e := newEnv(t, client.WithDelta())
	ts := e.startServer(t)
	lis := plainListener(ts, testutil.ServerFilterChain(testutil.FilterChainOptions{
		RouteConfigName: "server-routes",
		HTTPFilters:     []*v3httppb.HttpFilter{testutil.RBACFilter("rbac", testutil.RBACRules(v3rbacconfigpb.RBAC_ALLOW, map[string][]string{"anyone": nil}))},
	}))
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	ts.waitMode(t, server.ServingModeServing)
	tc := dial(t, ts.addr, insecure.NewCredentials())
	_, err := callReady(t, tc)
	wantCode(t, err, codes.Unavailable)
	if !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("RPC without the RouteConfiguration: %v, want the not-found error", err)
	}

	rc := testutil.ServerRouteConfig("server-routes")
	vh := rc.VirtualHosts[0]
	vh.Routes[0].Match.PathSpecifier = &v3routepb.RouteMatch_Path{Path: "/grpc.testing.TestService/UnaryCall"}
	vh.Routes = append(vh.Routes, &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/grpc.testing.TestService/Empty"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: "c"}}},
	})
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}, Routes: []*v3routepb.RouteConfiguration{rc}})
	if _, err := waitForSuccess(t, tc); err != nil {
		t.Fatalf("UnaryCall on a non-forwarding route: %v", err)
	}
	ts.noModeChange(t)
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	_, err = tc.EmptyCall(ctx, &testgrpc.Empty{})
	wantCode(t, err, codes.Unavailable)
	if !strings.Contains(status.Convert(err).Message(), "not non_forwarding_action") {
		t.Errorf("EmptyCall on a forwarding route: %v, want the action named", err)
	}
	_, err = recvErr(t, tc)
	wantCode(t, err, codes.Unavailable)

	denyAll := proto.Clone(rc).(*v3routepb.RouteConfiguration)
	denyAll.VirtualHosts[0].Routes[0].TypedPerFilterConfig = map[string]*anypb.Any{
		"rbac": testutil.MarshalAny(testutil.RBACPerRoute(testutil.RBACRules(v3rbacconfigpb.RBAC_DENY, map[string][]string{"everyone": nil}))),
	}
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}, Routes: []*v3routepb.RouteConfiguration{denyAll}})
	waitForCode(t, tc, codes.PermissionDenied)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	err = waitForCode(t, tc, codes.Unavailable)
	if !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("RPC after the RouteConfiguration was deleted: %v, want the not-found error", err)
	}
	ts.noModeChange(t)
}

// recvErr returns the error of a server stream of tc's StreamingOutputCall.
func recvErr(t *testing.T, tc testgrpc.TestServiceClient) (*testgrpc.StreamingOutputCallResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	st, err := tc.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{})
	if err != nil {
		return nil, err
	}
	return st.Recv()
}

// TestServer_WaitsForRDS checks that a Listener is applied only once the
// RouteConfigurations it names have arrived (gRFC A36, R-26.5): on a SotW
// stream, where a missing RouteConfiguration gets no answer, the server
// stays NOT_SERVING until it comes.
func TestServer_WaitsForRDS(t *testing.T) {
	e := newEnv(t)
	ts := e.startServer(t)
	lis := plainListener(ts, testutil.ServerFilterChain(testutil.FilterChainOptions{RouteConfigName: "server-routes"}))
	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}})
	if _, err := e.ms.WaitForRequest(t.Context(), func(r *testutil.Request) bool {
		return slices.Contains(r.Req.GetResourceNames(), "server-routes")
	}); err != nil {
		t.Fatal(err)
	}
	ts.noModeChange(t)
	tc := dial(t, ts.addr, insecure.NewCredentials())
	_, err := call(t, tc)
	wantCode(t, err, codes.Unavailable)

	e.update(t, testutil.Resources{Listeners: []*v3listenerpb.Listener{lis}, Routes: []*v3routepb.RouteConfiguration{testutil.ServerRouteConfig("server-routes")}})
	ts.waitMode(t, server.ServingModeServing)
	if _, err := callReady(t, tc); err != nil {
		t.Fatalf("RPC once the RouteConfiguration arrived: %v", err)
	}
}
