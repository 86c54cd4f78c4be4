// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
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
)

// waitForActiveFaults waits until n RPCs have an injected fault in
// progress.
func waitForActiveFaults(ctx context.Context, t *testing.T, n int64) {
	t.Helper()
	for xdsresolver.ActiveFaults() != n {
		if ctx.Err() != nil {
			t.Fatalf("active faults: %d; want %d", xdsresolver.ActiveFaults(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestResolver_E2E_FaultEndsWithClientStream checks that the interceptors
// release what they hold for a client-streaming RPC when it ends (its
// one RecvMsg): the active fault it counted for max_active_faults (gRFC
// A33), which was never released before, so that no later RPC was
// faulted.
//
//  1. Serve a fault filter delaying every RPC by 50ms, max_active_faults 1.
//  2. Once a unary RPC is delayed, make a client-streaming RPC (one message, CloseAndRecv).
//  3. The next unary RPC is delayed again: the stream's fault ended with it.
func TestResolver_E2E_FaultEndsWithClientStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	const delay = 50 * time.Millisecond
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a)
	r.Listeners[0] = withFault(t, r.Listeners[0], &v3faultpb.HTTPFault{
		Delay:           &v3faultcommonpb.FaultDelay{FaultDelaySecifier: &v3faultcommonpb.FaultDelay_FixedDelay{FixedDelay: durationpb.New(delay)}, Percentage: pct(100)},
		MaxActiveFaults: wrapperspb.UInt32(1),
	})
	e.ms.Update("", r)
	tc := e.dialWithInterceptors(t, "xds:///svc")
	for {
		start := time.Now()
		if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if time.Since(start) >= delay {
			break // the interceptors have the configuration
		}
	}

	st, err := tc.StreamingInputCall(ctx)
	if err != nil {
		t.Fatalf("StreamingInputCall: %v", err)
	}
	if err := st.Send(&testgrpc.StreamingInputCallRequest{Payload: &testgrpc.Payload{Body: []byte("abc")}}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	resp, err := st.CloseAndRecv()
	if err != nil || resp.GetAggregatedPayloadSize() != 3 {
		t.Fatalf("CloseAndRecv = %v, %v; want a size of 3", resp, err)
	}
	start := time.Now()
	if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("the RPC after the client-streaming RPC took %v; want it delayed by %v (a fault left active by the stream stops it)", d, delay)
	}
}

// TestResolver_E2E_MaxActiveFaultsProcessWide checks that
// max_active_faults counts the faults in progress in the whole process
// (gRFC A33, "Maximum active faults"), not per route, per configuration
// or per channel.
//
//  1. Serve a header-driven delay fault, max_active_faults 1, to two channels.
//  2. An RPC on the first channel asks for a delay of a minute: one fault is active.
//  3. A new configuration adds a route for EmptyCall to another cluster; the second channel uses it.
//  4. An EmptyCall on the second channel asking for a minute's delay is not delayed (it succeeds within its 5 s deadline).
func TestResolver_E2E_MaxActiveFaultsProcessWide(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	fault := &v3faultpb.HTTPFault{
		Delay:           &v3faultcommonpb.FaultDelay{FaultDelaySecifier: &v3faultcommonpb.FaultDelay_HeaderDelay_{HeaderDelay: &v3faultcommonpb.FaultDelay_HeaderDelay{}}, Percentage: pct(100)},
		MaxActiveFaults: wrapperspb.UInt32(1),
	}
	serve := func(routes ...*v3routepb.Route) {
		e.ms.Update("", testutil.Resources{
			Listeners: []*v3listenerpb.Listener{withFault(t, testutil.Listener("svc", "route-svc"), fault)},
			Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, routes...))},
			Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b")},
			Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-a", "127.0.0.1", a.port), testutil.Endpoints("eds-b", "127.0.0.1", b.port)},
		})
	}
	serve(testutil.ClusterRoute("", "cluster-a"))
	tc1, tc2 := e.dialWithInterceptors(t, "xds:///svc"), e.dialWithInterceptors(t, "xds:///svc")
	for _, tc := range []testgrpc.TestServiceClient{tc1, tc2} {
		for { // until the interceptors have the configuration
			start := time.Now()
			if _, err := tc.UnaryCall(metadata.AppendToOutgoingContext(ctx, "x-envoy-fault-delay-request", "50"), &testgrpc.SimpleRequest{}); err != nil {
				t.Fatalf("UnaryCall: %v", err)
			}
			if time.Since(start) >= 50*time.Millisecond {
				break
			}
		}
	}
	waitForActiveFaults(ctx, t, 0)

	hold, release := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "x-envoy-fault-delay-request", "60000"))
	held := make(chan error, 1)
	go func() {
		_, err := tc1.UnaryCall(hold, &testgrpc.SimpleRequest{})
		held <- err
	}()
	defer func() {
		release()
		<-held
		waitForActiveFaults(ctx, t, 0)
	}()
	waitForActiveFaults(ctx, t, 1)

	serve(testutil.ClusterRoute("/grpc.testing.TestService/EmptyCall", "cluster-b"), testutil.ClusterRoute("", "cluster-a"))
	for { // until the second channel has the new configuration
		var hdr metadata.MD
		if _, err := tc2.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&hdr)); err != nil {
			t.Fatalf("EmptyCall: %v", err)
		}
		if len(hdr.Get("server-id")) == 1 && hdr.Get("server-id")[0] == "B" {
			break
		}
	}
	rctx, rcancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, "x-envoy-fault-delay-request", "60000"), 5*time.Second)
	defer rcancel()
	if _, err := tc2.EmptyCall(rctx, &testgrpc.Empty{}); err != nil {
		t.Errorf("EmptyCall asking for a delay while another RPC holds the only active fault: %v; want success, not delayed", err)
	}
}
