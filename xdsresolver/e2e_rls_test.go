// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// End-to-end tests of the RLS cluster specifier plugin (gRFC A28 "RLS in
// xDS"), the scenarios of grpc-go's
// test/xds/xds_rls_clusterspecifier_plugin_test.go: a route whose action
// is the plugin, a fake RLS server that names the target cluster of each
// RPC, and clusters that no route names.

// lookupMessage returns the descriptor of a grpc.lookup.v1 message, which
// gRPC's RLS balancer (imported by xdsresolver) registers.
func lookupMessage(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("grpc.lookup.v1." + name))
	if err != nil {
		t.Fatal(err)
	}
	return mt.Descriptor()
}

// fakeRLS is a RouteLookupService whose answer to a request is the
// target the request's key "target" names, as "cluster-<target>".
type fakeRLS struct {
	addr string
	mu   sync.Mutex
	keys []map[string]string // of the requests received
}

func startFakeRLS(t *testing.T) *fakeRLS {
	t.Helper()
	reqDesc, respDesc := lookupMessage(t, "RouteLookupRequest"), lookupMessage(t, "RouteLookupResponse")
	f := &fakeRLS{}
	handler := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(reqDesc)
		if err := dec(req); err != nil {
			return nil, err
		}
		keys := map[string]string{}
		req.Get(reqDesc.Fields().ByName("key_map")).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			keys[k.String()] = v.String()
			return true
		})
		f.mu.Lock()
		f.keys = append(f.keys, keys)
		f.mu.Unlock()
		resp := dynamicpb.NewMessage(respDesc)
		targets := resp.Mutable(respDesc.Fields().ByName("targets")).List()
		targets.Append(protoreflect.ValueOfString("cluster-" + keys["target"]))
		return resp, nil
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "grpc.lookup.v1.RouteLookupService",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "RouteLookup", Handler: handler}},
	}, struct{}{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	f.addr = lis.Addr().String()
	return f
}

func (f *fakeRLS) requests() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]string(nil), f.keys...)
}

// rlsPlugin returns the route lookup plugin's config: one key builder for
// grpc.testing.TestService whose key "target" is the header x-target, and
// lookupService.
func rlsPlugin(t *testing.T, lookupService string) *anypb.Any {
	t.Helper()
	m := dynamicpb.NewMessage(lookupMessage(t, "RouteLookupClusterSpecifier"))
	if err := protojson.Unmarshal([]byte(`{"routeLookupConfig": {
		"grpcKeybuilders": [{"names": [{"service": "grpc.testing.TestService"}], "headers": [{"key": "target", "names": ["x-target"]}]}],
		"lookupService": "`+lookupService+`",
		"lookupServiceTimeout": "10s",
		"cacheSizeBytes": "1024"
	}}`), m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &anypb.Any{TypeUrl: "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier", Value: b}
}

// rlsResources is the Listener "svc" with one route, to the plugin, and
// a cluster per backend, "cluster-<id>", which no route names; mod
// changes each cluster.
func rlsResources(t *testing.T, lookupService string, mod func(*v3clusterpb.Cluster), bs ...*backend) testutil.Resources {
	rc := testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls-csp"}}},
	}))
	rc.ClusterSpecifierPlugins = []*v3routepb.ClusterSpecifierPlugin{{
		Extension: &v3corepb.TypedExtensionConfig{Name: "rls-csp", TypedConfig: rlsPlugin(t, lookupService)},
	}}
	r := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{rc},
	}
	for _, b := range bs {
		c := testutil.Cluster("cluster-"+b.id, "eds-"+b.id)
		if mod != nil {
			mod(c)
		}
		r.Clusters = append(r.Clusters, c)
		r.Endpoints = append(r.Endpoints, testutil.Endpoints("eds-"+b.id, "127.0.0.1", b.port))
	}
	return r
}

// TestRLS checks RPCs routed by RLS (TestRLSinxDS, with round robin and
// ring hash clusters): each RPC goes to the cluster the RLS server names
// for its key (the header x-target), which the channel subscribes to as
// RLS names it; the RLS server got the keys.
func TestRLS(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*v3clusterpb.Cluster)
	}{
		{"round robin", nil},
		{"ring hash", func(c *v3clusterpb.Cluster) { c.LbPolicy = v3clusterpb.Cluster_RING_HASH }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			a, b := startBackend(t, "A"), startBackend(t, "B")
			rls := startFakeRLS(t)
			e := newEnv(t, testutil.BootstrapOptions{}, nil)
			if err := e.ms.Update("", rlsResources(t, rls.addr, tc.mod, a, b)); err != nil {
				t.Fatal(err)
			}
			for _, dial := range []struct {
				name string
				tc   testgrpc.TestServiceClient
			}{
				{"NewBuilder", func() testgrpc.TestServiceClient { tc, _ := e.dial(t, "xds:///svc"); return tc }()},
				{"DialOptions", e.dialWithInterceptors(t, "xds:///svc")},
			} {
				for _, target := range []string{"A", "B", "A"} {
					rctx := metadata.AppendToOutgoingContext(ctx, "x-target", target)
					resp, err := dial.tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
					if err != nil || resp.GetServerId() != target {
						t.Fatalf("%s: RPC with x-target %s: %v, %v; want answered by %s", dial.name, target, resp, err, target)
					}
				}
			}
			got := rls.requests()
			if len(got) == 0 || got[0]["target"] != "A" {
				t.Errorf("RLS requests = %v, want keys with target A first", got)
			}
		})
	}
}

// TestRLS_UnknownTarget checks an RPC whose RLS target is a cluster the
// management server does not have: once the client knows that it does not
// exist (its does-not-exist timer, 1 s here), the RPC fails UNAVAILABLE
// naming the cluster, and the other targets still work.
func TestRLS_UnknownTarget(t *testing.T) {
	ctx := testContext(t)
	a := startBackend(t, "A")
	rls := startFakeRLS(t)
	e := newSecureEnv(t, 0, client.WithWatchExpiryTimeout(time.Second))
	if err := e.ms.Update("", rlsResources(t, rls.addr, nil, a)); err != nil {
		t.Fatal(err)
	}
	tc := e.dialWithInterceptors(t, "xds:///svc")
	rctx := metadata.AppendToOutgoingContext(ctx, "x-target", "A")
	if resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true)); err != nil || resp.GetServerId() != "A" {
		t.Fatalf("RPC to A: %v, %v", resp, err)
	}
	_, err := tc.UnaryCall(metadata.AppendToOutgoingContext(ctx, "x-target", "missing"), &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
	if !isUnavailableWith(err, `cluster-missing`) {
		t.Fatalf("RPC to a missing cluster: %v; want UNAVAILABLE naming cluster-missing", err)
	}
	if resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}); err != nil || resp.GetServerId() != "A" {
		t.Fatalf("RPC to A after: %v, %v", resp, err)
	}
}

// TestClusterSpecifierPlugins_Unknown checks unknown cluster specifier
// plugins as gRFC A28 says: a route of an optional one is left out (RPCs
// go on to the next route, to cluster-A), while a RouteConfiguration with
// a required one is NACKed (its channel's RPCs fail, naming the plugin's
// type). grpc-go's cluster-specifier-plugin-not-found-and-optional-route-
// should-ignore and unsupported-plugin cases, end to end.
func TestClusterSpecifierPlugins_Unknown(t *testing.T) {
	ctx := testContext(t)
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	routeConfig := func(name, domain string, optional bool) *v3routepb.RouteConfiguration {
		rc := testutil.RouteConfigWithVirtualHosts(name, testutil.VirtualHost("vh", []string{domain},
			&v3routepb.Route{
				Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
				Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "unknown"}}},
			},
			testutil.ClusterRoute("", "cluster-A"),
		))
		rc.ClusterSpecifierPlugins = []*v3routepb.ClusterSpecifierPlugin{{
			Extension:  &v3corepb.TypedExtensionConfig{Name: "unknown", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/example.UnknownPlugin"}},
			IsOptional: optional,
		}}
		return rc
	}
	if err := e.ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("optional", "route-optional"), testutil.Listener("required", "route-required")},
		Routes:    []*v3routepb.RouteConfiguration{routeConfig("route-optional", "optional", true), routeConfig("route-required", "required", false)},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-A", "eds-A")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-A", "127.0.0.1", a.port)},
	}); err != nil {
		t.Fatal(err)
	}
	if resp, err := e.dialWithInterceptors(t, "xds:///optional").UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil || resp.GetServerId() != "A" {
		t.Fatalf("RPC with an optional unknown plugin's route first: %v, %v; want answered by A (the route left out)", resp, err)
	}
	_, err := e.dialWithInterceptors(t, "xds:///required").UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if !isUnavailableWith(err, `unsupported cluster specifier plugin type "type.googleapis.com/example.UnknownPlugin"`) {
		t.Fatalf("RPC with a required unknown plugin: %v; want UNAVAILABLE naming the plugin's type (the RouteConfiguration NACKed)", err)
	}
}
