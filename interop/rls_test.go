// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/testutil"

	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// lookupDesc returns the descriptor of a grpc.lookup.v1 message, which
// gRPC's RLS balancer registers.
func lookupDesc(t *testing.T, name string) protoreflect.MessageDescriptor {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName("grpc.lookup.v1." + name))
	if err != nil {
		t.Fatal(err)
	}
	return mt.Descriptor()
}

// startRLSServer starts a RouteLookupService that answers each request
// with the target "cluster-<key target>", and returns its address.
func startRLSServer(t *testing.T) string {
	t.Helper()
	reqDesc, respDesc := lookupDesc(t, "RouteLookupRequest"), lookupDesc(t, "RouteLookupResponse")
	handler := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		req := dynamicpb.NewMessage(reqDesc)
		if err := dec(req); err != nil {
			return nil, err
		}
		target := req.Get(reqDesc.Fields().ByName("key_map")).Map().Get(protoreflect.ValueOfString("target").MapKey()).String()
		resp := dynamicpb.NewMessage(respDesc)
		resp.Mutable(respDesc.Fields().ByName("targets")).List().Append(protoreflect.ValueOfString("cluster-" + target))
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
	return lis.Addr().String()
}

// TestRLS_SideBySide_GRPCGo serves a route of the RLS cluster specifier
// plugin (gRFC A28) and two clusters no route names, A and B, to this
// library's channel and grpc-go's: each RPC goes to the cluster the RLS
// server names for its header x-target, on both.
func TestRLS_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var res testutil.Resources
	for _, id := range []string{"A", "B"} {
		b, err := testutil.StartBackend(testutil.BackendOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		r := testutil.Chain(testutil.ChainOptions{Listener: "unused-" + id, Ports: []uint32{b.Port}})
		r.Clusters[0].Name = "cluster-" + id
		res.Clusters, res.Endpoints = append(res.Clusters, r.Clusters...), append(res.Endpoints, r.Endpoints...)
	}
	cfg := dynamicpb.NewMessage(lookupDesc(t, "RouteLookupClusterSpecifier"))
	if err := protojson.Unmarshal([]byte(`{"routeLookupConfig": {
		"grpcKeybuilders": [{"names": [{"service": "grpc.testing.TestService"}], "headers": [{"key": "target", "names": ["x-target"]}]}],
		"lookupService": "`+startRLSServer(t)+`",
		"lookupServiceTimeout": "10s",
		"cacheSizeBytes": "1024"
	}}`), cfg); err != nil {
		t.Fatal(err)
	}
	cfgBytes, err := proto.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc := testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: ""}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{ClusterSpecifier: &v3routepb.RouteAction_ClusterSpecifierPlugin{ClusterSpecifierPlugin: "rls-csp"}}},
	}))
	rc.ClusterSpecifierPlugins = []*v3routepb.ClusterSpecifierPlugin{{Extension: &v3corepb.TypedExtensionConfig{
		Name: "rls-csp", TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier", Value: cfgBytes},
	}}}
	res.Listeners = testutil.Chain(testutil.ChainOptions{Listener: "svc"}).Listeners
	res.Routes = append(res.Routes, rc)
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	for _, ch := range bothChannels(t, s, "xds:///svc", grpc.WithTransportCredentials(insecure.NewCredentials())) {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		for _, target := range []string{"A", "B", "A"} {
			rctx, rcancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "x-target", target), 10*time.Second)
			resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
			rcancel()
			if status.Code(err) != codes.OK || resp.GetServerId() != target {
				t.Errorf("%s: RPC with x-target %s: %v, %v; want answered by %s", ch.name, target, resp.GetServerId(), err, target)
			}
		}
	}
}
