// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// TestLocalityWeights_SideBySide_GRPCGo serves one go-control-plane
// configuration per endpoint policy, a cluster of two localities of
// weights 1 (A) and 3 (B), to this library's channel and to grpc-go's xDS
// channel, and checks that both split 2000 sequential RPCs alike: under
// ROUND_ROBIN (xds_wrr_locality) by locality weight, 25 / 75; under
// LEAST_REQUEST, which gRPC runs over the whole priority, about evenly.
func TestLocalityWeights_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := startIDServer(t, "A"), startIDServer(t, "B")
	for _, tt := range []struct {
		policy v3clusterpb.Cluster_LbPolicy
		wantA  float64 // % of RPCs on A
	}{
		{v3clusterpb.Cluster_ROUND_ROBIN, 25},
		{v3clusterpb.Cluster_LEAST_REQUEST, 50},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			res := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
			res.Clusters[0].LbPolicy = tt.policy
			locality := func(zone string, weight uint32, s *idServer) *v3endpointpb.LocalityLbEndpoints {
				return &v3endpointpb.LocalityLbEndpoints{
					Locality:            &v3corepb.Locality{Region: "r", Zone: zone},
					LoadBalancingWeight: wrapperspb.UInt32(weight),
					LbEndpoints:         testutil.Endpoints("x", "127.0.0.1", s.port).GetEndpoints()[0].GetLbEndpoints(),
				}
			}
			res.Endpoints = []*v3endpointpb.ClusterLoadAssignment{{ClusterName: "eds-svc", Endpoints: []*v3endpointpb.LocalityLbEndpoints{locality("a", 1, a), locality("b", 3, b)}}}
			s := startGCPServer(t)
			s.setSnapshot(ctx, t, "1", res)
			for _, ch := range bothChannels(t, s, "xds:///svc") {
				tc := testgrpc.NewTestServiceClient(ch.cc)
				for seen := map[string]bool{}; len(seen) < 2; { // both connected
					resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
					if err != nil {
						t.Fatalf("%s: %v", ch.name, err)
					}
					seen[resp.GetServerId()] = true
				}
				const n = 2000
				onA := 0
				for range n {
					resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
					if err != nil {
						t.Fatalf("%s: %v", ch.name, err)
					}
					if resp.GetServerId() == "A" {
						onA++
					}
				}
				share := float64(onA) * 100 / n
				t.Logf("%s: %.1f%% of RPCs on A", ch.name, share)
				if share < tt.wantA-5 || share > tt.wantA+5 {
					t.Errorf("%s: %.1f%% of RPCs on A; want %v ± 5%%", ch.name, share, tt.wantA)
				}
			}
		})
	}
}
