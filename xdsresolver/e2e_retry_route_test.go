// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// Per-route retries in the interceptor (retry.go, path B): routes that a
// header tells apart, with different retry policies. A service config
// names methods, so it cannot give them their policies: with
// DialOptions, the interceptors retry each RPC with its route's policy.

// headerRetryRoute is a route of every method, for RPCs whose header
// x-route is value (every RPC when value is ""), to cluster, retrying
// retryOn numRetries times.
func headerRetryRoute(value, cluster, retryOn string, numRetries uint32) *v3routepb.Route {
	rt := testutil.ClusterRoute("", cluster)
	if value != "" {
		rt.Match.Headers = []*v3routepb.HeaderMatcher{{
			Name:                 "x-route",
			HeaderMatchSpecifier: &v3routepb.HeaderMatcher_StringMatch{StringMatch: &v3matcherpb.StringMatcher{MatchPattern: &v3matcherpb.StringMatcher_Exact{Exact: value}}},
		}}
	}
	rt.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: retryOn, NumRetries: wrapperspb.UInt32(numRetries)}
	return rt
}

// routeA is the context of an RPC that matches headerRetryRoute("a", …).
func routeA(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-route", "a")
}

// TestRetries_PerRouteInInterceptor checks that each RPC gets its route's
// retry policy when routes with different policies match the same
// methods (gRFC A44 per RPC): route "a" (header x-route: a) retries
// UNAVAILABLE 3 times, the other route retries only CANCELLED, once.
//
//  1. A always fails UNAVAILABLE: RPCs of route a make 4 attempts, each
//     retry with grpc-previous-rpc-attempts; others 1.
//  2. A fails every other attempt: unary RPCs and bidi streams (messages
//     sent before the failure, replayed) of route a all succeed.
//  3. A sends headers, then fails: 1 attempt (gRFC A6's commit rule).
//
// Without the interceptor's retries (NewBuilder alone, or before this
// feature) the method gets no policy, and route a's RPCs make 1 attempt.
func TestRetries_PerRouteInInterceptor(t *testing.T) {
	ctx := testContext(t)
	a := startFlaky(t, "A", failAlways)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serveRoutes(e, []*v3routepb.Route{
		headerRetryRoute("a", "cluster-A", "unavailable", 3),
		headerRetryRoute("", "cluster-A", "cancelled", 1),
	}, a)
	tc := e.dialWithInterceptors(t, "xds:///svc")
	if _, err := unaryServerID(ctx, tc); status.Code(err) != codes.Unavailable {
		t.Fatalf("first RPC: %v; want UNAVAILABLE from A", err)
	}

	attempts := func(ctx context.Context) (int64, int64, error) {
		calls, retries := a.calls.Load(), a.retries.Load()
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		return a.calls.Load() - calls, a.retries.Load() - retries, err
	}
	for range 3 {
		n, retries, err := attempts(routeA(ctx))
		if status.Code(err) != codes.Unavailable || n != 4 || retries != 3 {
			t.Fatalf("RPC of route a: %v after %d attempts (%d with grpc-previous-rpc-attempts); want UNAVAILABLE after 4 (3)", err, n, retries)
		}
		if p := a.maxPrev.Load(); p != 3 {
			t.Errorf("largest grpc-previous-rpc-attempts = %d, want 3", p)
		}
		if n, _, err := attempts(ctx); status.Code(err) != codes.Unavailable || n != 1 {
			t.Fatalf("RPC of the other route: %v after %d attempts; want UNAVAILABLE after 1 (it retries CANCELLED only)", err, n)
		}
	}

	a.fail.Store(int32(failOdd))
	for i := range 20 {
		if _, err := tc.UnaryCall(routeA(ctx), &testgrpc.SimpleRequest{}); err != nil {
			t.Fatalf("unary RPC %d of route a: %v; want success after a retry", i, err)
		}
	}
	for i := range 20 {
		st, err := tc.FullDuplexCall(routeA(ctx))
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		for _, body := range []string{"a", "bc"} {
			if err := st.Send(&testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte(body)}}); err != nil {
				t.Fatalf("stream %d: Send: %v", i, err)
			}
		}
		if err := st.CloseSend(); err != nil {
			t.Fatalf("stream %d: CloseSend: %v", i, err)
		}
		for _, want := range []string{"a", "bc"} {
			resp, err := st.Recv()
			if err != nil || string(resp.GetPayload().GetBody()) != want {
				t.Fatalf("stream %d: Recv = %v, %v; want %q", i, resp, err, want)
			}
		}
		if _, err := st.Recv(); err != io.EOF {
			t.Fatalf("stream %d: end: %v; want io.EOF", i, err)
		}
	}

	a.fail.Store(int32(failAfterHeaders))
	if n, _, err := attempts(routeA(ctx)); status.Code(err) != codes.Unavailable || n != 1 {
		t.Fatalf("RPC of route a after response headers: %v after %d attempts; want UNAVAILABLE after 1", err, n)
	}
}

// TestRetries_PerRouteWithoutInterceptor checks what a channel of
// NewBuilder alone does with the same routes: the method has no policy
// (the resolver warns), so no RPC is retried.
func TestRetries_PerRouteWithoutInterceptor(t *testing.T) {
	ctx := testContext(t)
	a := startFlaky(t, "A", failAlways)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serveRoutes(e, []*v3routepb.Route{
		headerRetryRoute("a", "cluster-A", "unavailable", 3),
		headerRetryRoute("", "cluster-A", "cancelled", 1),
	}, a)
	tc, _ := e.dial(t, "xds:///svc")
	if _, err := unaryServerID(ctx, tc); status.Code(err) != codes.Unavailable {
		t.Fatalf("first RPC: %v; want UNAVAILABLE from A", err)
	}
	calls := a.calls.Load()
	if _, err := tc.UnaryCall(routeA(ctx), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unavailable || a.calls.Load()-calls != 1 {
		t.Fatalf("RPC of route a: %v after %d attempts; want UNAVAILABLE after 1", err, a.calls.Load()-calls)
	}
}

// TestRetries_PerRouteNotAfterDrop checks that the interceptor's retries,
// as grpc's, never retry an RPC whose pick failed with the router's
// status (a drop, gRFC A27): an application interceptor, which the
// interceptors call once per attempt, sees one attempt.
func TestRetries_PerRouteNotAfterDrop(t *testing.T) {
	ctx := testContext(t)
	a := startFlaky(t, "A", failAlways)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serveRoutes(e, []*v3routepb.Route{
		headerRetryRoute("a", "cluster-A", "unavailable", 3),
		headerRetryRoute("", "cluster-A", "cancelled", 1),
	}, a)
	var attempts atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		attempts.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	opts := append(xdsresolver.DialOptions(e.client, xdsresolver.WithLogger(testLogger(t))), grpc.WithChainUnaryInterceptor(count))
	cc, err := grpc.NewClient("xds:///svc", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	if _, err := unaryServerID(ctx, tc); status.Code(err) != codes.Unavailable {
		t.Fatalf("first RPC: %v; want UNAVAILABLE from A", err)
	}
	attempts.Store(0)
	if _, err := tc.UnaryCall(routeA(ctx), &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unavailable || attempts.Load() != 4 {
		t.Fatalf("RPC of route a: %v after %d attempts; want 4", err, attempts.Load())
	}
	// Drop every RPC of cluster-A.
	cla := testutil.Endpoints("eds-A", "127.0.0.1", a.port)
	cla.Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
		Category: "all", DropPercentage: &v3typepb.FractionalPercent{Numerator: 100, Denominator: v3typepb.FractionalPercent_HUNDRED},
	}}}
	serveRoutesWith(e, []*v3routepb.Route{
		headerRetryRoute("a", "cluster-A", "unavailable", 3),
		headerRetryRoute("", "cluster-A", "cancelled", 1),
	}, []*v3endpointpb.ClusterLoadAssignment{cla}, a)
	for { // until the configuration with the drop is in use
		_, err := tc.UnaryCall(routeA(ctx), &testgrpc.SimpleRequest{})
		if isUnavailableWith(err, `drop_overloads category "all"`) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("RPCs are not dropped: %v", err)
		}
	}
	for range 5 {
		attempts.Store(0)
		if _, err := tc.UnaryCall(routeA(ctx), &testgrpc.SimpleRequest{}); !isUnavailableWith(err, `drop_overloads category "all"`) || attempts.Load() != 1 {
			t.Fatalf("RPC of route a: %v after %d attempts; want dropped after 1", err, attempts.Load())
		}
	}
}
