// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestRetries_SideBySide_GRPCGo serves one go-control-plane configuration,
// a route retrying UNAVAILABLE 3 times (gRFC A44) to a backend that fails
// every other RPC before any header, to this library's channel and to
// grpc-go's xDS channel, and checks that both succeed on at least 99 % of
// 500 RPCs with at most 4 attempts each (grpc-previous-rpc-attempts ≤ 3).
func TestRetries_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	be := startFlakyServer(t, "A", true, false)
	res := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{be.port}})
	rt := testutil.ClusterRoute("", "cluster-svc")
	// A 2ms base backoff (25ms by default) keeps the test short.
	rt.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "unavailable", NumRetries: wrapperspb.UInt32(3),
		RetryBackOff: &v3routepb.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(2 * time.Millisecond)}}
	res.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, rt))}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	for _, ch := range bothChannels(t, s, "xds:///svc") {
		tc := testgrpc.NewTestServiceClient(ch.cc)
		cctx := channelCtx(ctx, ch)
		for ok := 0; ok < 10; { // until the configuration (with retries) is in
			if _, err := tc.UnaryCall(cctx, &testgrpc.SimpleRequest{}); err == nil {
				ok++
			} else {
				ok = 0
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: RPCs are not retried", ch.name)
			}
		}
		const n = 500
		failed := 0
		for range n {
			if _, err := tc.UnaryCall(cctx, &testgrpc.SimpleRequest{}); err != nil {
				failed++
			}
		}
		calls, maxPrev := be.counts(ch.name)
		t.Logf("%s: %d of %d RPCs failed; the backend saw %d attempts, grpc-previous-rpc-attempts at most %d", ch.name, failed, n, calls, maxPrev)
		if failed > n/100 {
			t.Errorf("%s: %d of %d RPCs failed; want at most 1%%", ch.name, failed, n)
		}
		if maxPrev < 1 || maxPrev > 3 {
			t.Errorf("%s: largest grpc-previous-rpc-attempts %d; want 1 to 3 (at most 4 attempts)", ch.name, maxPrev)
		}
	}
}
