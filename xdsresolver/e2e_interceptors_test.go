// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultcommonpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	v3httppb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// dialWithInterceptors is env.dial with xdsresolver.DialOptions.
func (e *env) dialWithInterceptors(t *testing.T, target string) testgrpc.TestServiceClient {
	t.Helper()
	opts := append(xdsresolver.DialOptions(e.client, xdsresolver.WithLogger(testLogger(t))), grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		t.Fatalf("grpc.NewClient(%q): %v", target, err)
	}
	t.Cleanup(func() { cc.Close() })
	return testgrpc.NewTestServiceClient(cc)
}

// withFault returns l with the fault filter f before the router.
func withFault(t *testing.T, l *v3listenerpb.Listener, f *v3faultpb.HTTPFault) *v3listenerpb.Listener {
	t.Helper()
	hcm := &v3httppb.HttpConnectionManager{}
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.HttpFilters = append([]*v3httppb.HttpFilter{{
		Name:       "fault",
		ConfigType: &v3httppb.HttpFilter_TypedConfig{TypedConfig: testutil.MarshalAny(f)},
	}}, hcm.HttpFilters...)
	l.ApiListener.ApiListener = testutil.MarshalAny(hcm)
	return l
}

func pct(n uint32) *v3typepb.FractionalPercent {
	return &v3typepb.FractionalPercent{Numerator: n, Denominator: v3typepb.FractionalPercent_HUNDRED}
}

// TestResolver_E2E_MaxStreamDuration checks gRFC A31 with DialOptions:
// the route's grpc_timeout_header_max caps the deadline of its RPCs.
//
//  1. Serve a route with grpc_timeout_header_max 50ms; the backend holds RPCs.
//  2. An RPC with a 10 s deadline fails DEADLINE_EXCEEDED long before.
func TestResolver_E2E_MaxStreamDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackendWith(t, &backend{id: "A", arrived: make(chan struct{}, 10), release: make(chan struct{})})
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a)
	rt := testutil.ClusterRoute("", "cluster-svc")
	rt.GetRoute().MaxStreamDuration = &v3routepb.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(50 * time.Millisecond)}
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, rt))}
	e.ms.Update("", r)
	tc := e.dialWithInterceptors(t, "xds:///svc")
	// EmptyCalls are not held: one succeeding means the configuration
	// reached the interceptors.
	for {
		if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("EmptyCall: %v", err)
		}
	}
	start := time.Now()
	_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if status.Code(err) != codes.DeadlineExceeded || time.Since(start) > 5*time.Second {
		t.Errorf("held RPC: %v after %v; want DEADLINE_EXCEEDED after about 50ms", err, time.Since(start))
	}
}

// TestResolver_E2E_FaultInjection checks gRFC A33 with DialOptions: an
// abort for RPCs carrying a header, a header-driven abort code, a delay
// that outlasts the RPC's deadline, and an abort percentage.
func TestResolver_E2E_FaultInjection(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serve := func(f *v3faultpb.HTTPFault) {
		r := chain(a)
		r.Listeners[0] = withFault(t, r.Listeners[0], f)
		e.ms.Update("", r)
	}
	tc := e.dialWithInterceptors(t, "xds:///svc")
	// waitForCode makes RPCs (with md) until one ends with code: the
	// configuration has reached the channel.
	waitForCode := func(md metadata.MD, code codes.Code) error {
		t.Helper()
		var err error
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(metadata.NewOutgoingContext(ctx, md), 500*time.Millisecond)
			_, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
			rcancel()
			if status.Code(err) == code {
				return err
			}
		}
		t.Fatalf("no RPC ended with %v; last: %v", code, err)
		return nil
	}

	// 1. Abort with ABORTED for RPCs with x-fault: yes only.
	serve(&v3faultpb.HTTPFault{
		Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_GrpcStatus{GrpcStatus: uint32(codes.Aborted)}, Percentage: pct(100)},
		//lint:ignore SA1019 gRPC still honours the deprecated exact_match form (A28), which control planes send.
		Headers: []*v3routepb.HeaderMatcher{{Name: "x-fault", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ExactMatch{ExactMatch: "yes"}}},
	})
	if err := waitForCode(metadata.Pairs("x-fault", "yes"), codes.Aborted); !contains(err, "fault injection") {
		t.Errorf("aborted RPC: %v; want a message naming fault injection", err)
	}
	if err := verifyServer(ctx, tc, "A", 5); err != nil {
		t.Errorf("RPCs without x-fault: %v", err)
	}

	// 2. Abort code from the header x-envoy-fault-abort-grpc-request.
	serve(&v3faultpb.HTTPFault{Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_HeaderAbort_{HeaderAbort: &v3faultpb.FaultAbort_HeaderAbort{}}, Percentage: pct(100)}})
	waitForCode(metadata.Pairs("x-envoy-fault-abort-grpc-request", "5"), codes.NotFound)

	// 3. A delay of an hour: RPCs end at their deadline, never reaching A.
	serve(&v3faultpb.HTTPFault{Delay: &v3faultcommonpb.FaultDelay{
		FaultDelaySecifier: &v3faultcommonpb.FaultDelay_FixedDelay{FixedDelay: durationpb.New(time.Hour)}, Percentage: pct(100),
	}})
	waitForCode(nil, codes.DeadlineExceeded)
	served := a.served.Load()
	for range 3 {
		rctx, rcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := tc.UnaryCall(rctx, &testgrpc.SimpleRequest{})
		rcancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("delayed RPC: %v; want DEADLINE_EXCEEDED", err)
		}
	}
	if a.served.Load() != served {
		t.Errorf("delayed RPCs reached the backend")
	}

	// 4. Abort 50 % of RPCs, at most 1000 active faults.
	serve(&v3faultpb.HTTPFault{
		Abort:           &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_HttpStatus{HttpStatus: 503}, Percentage: pct(50)},
		MaxActiveFaults: wrapperspb.UInt32(1000),
	})
	waitForCode(nil, codes.Unavailable)
	const n = 600
	aborted := 0
	for range n {
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		switch {
		case err == nil:
		case status.Code(err) == codes.Unavailable && contains(err, "fault injection"):
			aborted++
		default:
			t.Fatalf("RPC: %v", err)
		}
	}
	if share := float64(aborted) / n; share < 0.42 || share > 0.58 {
		t.Errorf("%d of %d RPCs aborted; want about 50%%", aborted, n)
	}
}

// TestResolver_E2E_WeightedClusterFaultOverride checks that, with
// DialOptions, a weighted cluster's typed_per_filter_config overrides the
// fault filter for the RPCs sent to that cluster only (gRFC A33, A39).
//
//  1. Serve a Listener with a fault filter that injects nothing, and a route splitting 50/50 between cluster-a (overriding the filter: abort 100 % with ABORTED) and cluster-b.
//  2. Of 200 RPCs, those routed to cluster-a fail with ABORTED naming fault injection (A serves none); the others reach B; both kinds happen.
func TestResolver_E2E_WeightedClusterFaultOverride(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	rt := testutil.WeightedClustersRoute("", testutil.ClusterWeight{Name: "cluster-a", Weight: 1}, testutil.ClusterWeight{Name: "cluster-b", Weight: 1})
	for _, cw := range rt.GetRoute().GetWeightedClusters().GetClusters() {
		if cw.GetName() == "cluster-a" {
			cw.TypedPerFilterConfig = map[string]*anypb.Any{"fault": testutil.MarshalAny(&v3faultpb.HTTPFault{
				Abort: &v3faultpb.FaultAbort{ErrorType: &v3faultpb.FaultAbort_GrpcStatus{GrpcStatus: uint32(codes.Aborted)}, Percentage: pct(100)},
			})}
		}
	}
	e.ms.Update("", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{withFault(t, testutil.Listener("svc", "route-svc"), &v3faultpb.HTTPFault{})},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, rt))},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-a", "127.0.0.1", a.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port)},
	})
	tc := e.dialWithInterceptors(t, "xds:///svc")
	// RPCs made before the interceptors have the configuration are not
	// faulted: wait for B, then count A's RPCs from there.
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	servedA := a.served.Load()
	const n = 200
	aborted, toB := 0, 0
	for range n {
		id, err := unaryServerID(ctx, tc)
		switch {
		case err == nil && id == "B":
			toB++
		case status.Code(err) == codes.Aborted && contains(err, "fault injection"):
			aborted++
		default:
			t.Fatalf("RPC: server %q, error %v; want B or an ABORTED fault", id, err)
		}
	}
	if aborted < n/4 || toB < n/4 {
		t.Errorf("%d RPCs aborted, %d reached B; want about %d each", aborted, toB, n/2)
	}
	if got := a.served.Load() - servedA; got != 0 {
		t.Errorf("A served %d RPCs; want 0 (each RPC routed to cluster-a is aborted)", got)
	}
}
