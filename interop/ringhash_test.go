// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestRingHash_SideBySide_GRPCGo serves one go-control-plane
// configuration, a RING_HASH cluster whose route hashes the header
// x-user, to this library's channel and to grpc-go's xDS channel, and
// checks that 20 users land each on the same endpoint through both (gRFC
// A42: the hash of the route's policies, the ring of the endpoints'
// addresses and weights): a fleet mixing both clients agrees.
//
// The cluster has six endpoints in two localities of weights 1 and 3, and
// a minimum ring size of 64, so that the ring's construction (weights,
// normalization, sizes) matters as much as the hash.
func TestRingHash_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var servers []*idServer
	for i := range 6 {
		servers = append(servers, startIDServer(t, fmt.Sprintf("S%d", i)))
	}
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	route := testutil.ClusterRoute("", "cluster-svc")
	route.GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{{
		PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: &v3routepb.RouteAction_HashPolicy_Header{HeaderName: "x-user"}},
	}}
	res.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, route))}
	c := testutil.Cluster("cluster-svc", "eds-svc")
	c.LbPolicy = v3clusterpb.Cluster_RING_HASH
	c.LbConfig = &v3clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &v3clusterpb.Cluster_RingHashLbConfig{MinimumRingSize: wrapperspb.UInt64(64)}}
	res.Clusters = []*v3clusterpb.Cluster{c}
	locality := func(zone string, weight uint32, ss ...*idServer) *v3endpointpb.LocalityLbEndpoints {
		l := &v3endpointpb.LocalityLbEndpoints{Locality: &v3corepb.Locality{Region: "r", Zone: zone}, LoadBalancingWeight: wrapperspb.UInt32(weight)}
		for _, s := range ss {
			l.LbEndpoints = append(l.LbEndpoints, testutil.Endpoints("x", "127.0.0.1", s.port).GetEndpoints()[0].GetLbEndpoints()[0])
		}
		return l
	}
	res.Endpoints = []*v3endpointpb.ClusterLoadAssignment{{ClusterName: "eds-svc", Endpoints: []*v3endpointpb.LocalityLbEndpoints{
		locality("a", 1, servers[0], servers[1], servers[2]),
		locality("b", 3, servers[3], servers[4], servers[5]),
	}}}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	placed := map[string][]string{} // channel → server of each user
	for _, ch := range bothChannels(t, s, "xds:///svc") {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		for u := range 20 {
			uctx := metadata.AppendToOutgoingContext(ctx, "x-user", fmt.Sprintf("user-%d", u))
			var resp *testgrpc.SimpleResponse
			var err error
			for resp == nil && ctx.Err() == nil { // the first RPCs may wait for the configuration
				rctx, rcancel := context.WithTimeout(uctx, 2*time.Second)
				resp, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
				rcancel()
			}
			if err != nil {
				t.Fatalf("%s: user-%d: %v", ch.name, u, err)
			}
			placed[ch.name] = append(placed[ch.name], resp.GetServerId())
		}
	}
	ours, theirs := placed["proxyless/xds"], placed["grpc-go xds"]
	t.Logf("users on proxyless/xds: %v", ours)
	t.Logf("users on grpc-go xds:   %v", theirs)
	differ := 0
	for u := range ours {
		if ours[u] != theirs[u] {
			differ++
			t.Errorf("user-%d: on %s through this library, on %s through grpc-go", u, ours[u], theirs[u])
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d users land elsewhere than with grpc-go", differ, len(ours))
	}
}
