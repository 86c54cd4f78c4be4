// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"
	"time"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3wrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
)

// withPolicy sets c's endpoint policy: "round_robin", "ring_hash",
// "least_request" or "weighted_round_robin".
func withPolicy(t *testing.T, c *v3clusterpb.Cluster, policy string) *v3clusterpb.Cluster {
	t.Helper()
	switch policy {
	case "round_robin":
	case "ring_hash":
		c.LbPolicy = v3clusterpb.Cluster_RING_HASH
	case "least_request":
		c.LbPolicy = v3clusterpb.Cluster_LEAST_REQUEST
	case "weighted_round_robin":
		c.LoadBalancingPolicy = &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "wrr", TypedConfig: testutil.MarshalAny(&v3wrrpb.ClientSideWeightedRoundRobin{})},
		}}}
	default:
		t.Fatalf("unknown policy %q", policy)
	}
	return c
}

// failurePercentage is outlier detection by failure percentage alone
// (gRFC A50): every interval, an endpoint that failed more than half of
// its 5 RPCs or more is ejected for 1 s (times its ejections), at most
// half of the endpoints at once.
func failurePercentage(interval time.Duration) *v3clusterpb.OutlierDetection {
	return &v3clusterpb.OutlierDetection{
		Interval:                       durationpb.New(interval),
		BaseEjectionTime:               durationpb.New(time.Second),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(2),
		FailurePercentageRequestVolume: wrapperspb.UInt32(5),
	}
}

// endpointsOf returns a ClusterLoadAssignment of name whose priority i
// holds the backends of prios[i].
func endpointsOf(name string, prios ...[]*flakyBackend) *v3endpointpb.ClusterLoadAssignment {
	cla := &v3endpointpb.ClusterLoadAssignment{ClusterName: name}
	for i, bs := range prios {
		var eps []*v3endpointpb.LbEndpoint
		for _, b := range bs {
			eps = append(eps, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY))
		}
		cla.Endpoints = append(cla.Endpoints, localityEndpoints(string(rune('a'+i)), uint32(i), eps...))
	}
	return cla
}

// TestResolver_E2E_OutlierDetection checks outlier detection (gRFC A50)
// under each endpoint policy, and with priorities: an endpoint failing
// every RPC is ejected, then receives (almost) no RPC, and comes back
// once healthy, after its ejection time.
//
//  1. Serve a cluster of A, B and C (for "priorities": A and C in priority 0, D in priority 1) with failure percentage ejection every 300ms; C fails every RPC.
//  2. Once C failed RPCs, then 30 RPCs in a row succeed (C is ejected), fewer than 2 % of 200 RPCs fail; D gets none.
//  3. C becomes healthy: an RPC reaches it again.
func TestResolver_E2E_OutlierDetection(t *testing.T) {
	for _, policy := range []string{"round_robin", "ring_hash", "least_request", "weighted_round_robin", "priorities"} {
		t.Run(policy, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			a, b, c, d := startFlaky(t, "A", failNever), startFlaky(t, "B", failNever), startFlaky(t, "C", failAlways), startFlaky(t, "D", failNever)
			e := newEnv(t, testutil.BootstrapOptions{}, nil)
			r := chain()
			cl := testutil.Cluster("cluster-svc", "eds-svc")
			cl.OutlierDetection = failurePercentage(300 * time.Millisecond)
			if policy == "priorities" {
				r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{endpointsOf("eds-svc", []*flakyBackend{a, c}, []*flakyBackend{d})}
			} else {
				withPolicy(t, cl, policy)
				r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{endpointsOf("eds-svc", []*flakyBackend{a, b, c})}
			}
			r.Clusters = []*v3clusterpb.Cluster{cl}
			e.ms.Update("", r)
			tc, _ := e.dial(t, "xds:///svc")

			start := time.Now()
			for ok := 0; ok < 30 || c.calls.Load() == 0; { // C failed RPCs, then none for 30 RPCs
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err == nil {
					ok++
				} else {
					ok = 0
				}
				if ctx.Err() != nil {
					t.Fatalf("C was not ejected: RPCs still fail")
				}
			}
			t.Logf("C ejected after %v, %d RPCs reached it", time.Since(start), c.calls.Load())
			const n = 200
			calls, failed := c.calls.Load(), 0
			for range n {
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
					failed++
				}
			}
			if failed >= n/50 || c.calls.Load()-calls >= n/50 {
				t.Errorf("with C ejected, %d of %d RPCs failed, %d reached C; want under 2%%", failed, n, c.calls.Load()-calls)
			}
			if d.calls.Load() != 0 {
				t.Errorf("D, in priority 1, got %d RPCs; want none (priority 0 stays READY)", d.calls.Load())
			}

			c.fail.Store(int32(failNever))
			healthy := time.Now()
			for calls := c.calls.Load(); c.calls.Load() == calls; {
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil && ctx.Err() != nil {
					t.Fatalf("C, healthy, got no RPC again: %v", err)
				}
			}
			t.Logf("C back %v after it became healthy", time.Since(healthy))
		})
	}
}
