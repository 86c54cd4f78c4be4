// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestCustomLBPolicy_SideBySide_GRPCGo serves one go-control-plane
// configuration, a cluster of three endpoints whose load_balancing_policy
// is an unregistered TypedStruct, then testutil's pin policy, which the
// test registers with gRPC (gRFC A52), with the port of B in its config, to
// this library's channel and to grpc-go's xDS channel, and checks that
// both send every RPC to B.
func TestCustomLBPolicy_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	testutil.RegisterPinPolicy()
	a, b, c := startIDServer(t, "A"), startIDServer(t, "B"), startIDServer(t, "C")
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{a.port, b.port, c.port}})
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.LoadBalancingPolicy = testutil.PinPolicy(b.port)
	res.Clusters = []*v3clusterpb.Cluster{cl}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	for _, ch := range bothChannels(t, s, "xds:///svc") {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		got := map[string]int{}
		for i := 0; i < 100; {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
			rcancel()
			if err != nil {
				if ctx.Err() != nil || i > 0 {
					t.Fatalf("%s: RPC %d: %v", ch.name, i, err)
				}
				continue // the first RPCs may wait for the configuration
			}
			got[resp.GetServerId()]++
			i++
		}
		if got["B"] != 100 {
			t.Errorf("%s: RPCs per server %v; want all 100 on B", ch.name, got)
		}
	}
}
