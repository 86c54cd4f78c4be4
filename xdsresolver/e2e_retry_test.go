// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// failure says how a flakyBackend fails.
type failure int

const (
	failOdd          failure = iota // every other RPC (the 1st, 3rd, …) fails UNAVAILABLE before any header
	failAlways                      // every RPC fails UNAVAILABLE before any header
	failAfterHeaders                // every RPC sends its headers, then fails UNAVAILABLE
	failNever
)

// flakyBackend is a TestService that fails RPCs as its failure says, and
// records the attempts it sees (gRFC A6's grpc-previous-rpc-attempts).
type flakyBackend struct {
	testgrpc.UnimplementedTestServiceServer
	id      string
	fail    atomic.Int32 // a failure; the test may change it
	port    uint32
	calls   atomic.Int64 // RPCs received, of every method
	retries atomic.Int64 // of which retries (with grpc-previous-rpc-attempts)
	maxPrev atomic.Int64 // the largest grpc-previous-rpc-attempts seen
}

// attempt records an RPC and returns the error it fails with, if any.
func (b *flakyBackend) attempt(ctx context.Context) error {
	n := b.calls.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) == 1 {
		b.retries.Add(1)
		if p, err := strconv.ParseInt(v[0], 10, 64); err == nil && p > b.maxPrev.Load() {
			b.maxPrev.Store(p)
		}
	}
	switch f := failure(b.fail.Load()); {
	case f == failAlways, f == failOdd && n%2 == 1:
		return status.Error(codes.Unavailable, "failing on purpose")
	case f == failAfterHeaders:
		_ = grpc.SendHeader(ctx, metadata.Pairs("server-id", b.id))
		return status.Error(codes.Unavailable, "failing on purpose, after the headers")
	}
	return nil
}

func (b *flakyBackend) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if err := b.attempt(ctx); err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{ServerId: b.id}, nil
}

func (b *flakyBackend) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	if err := b.attempt(ctx); err != nil {
		return nil, err
	}
	return &testgrpc.Empty{}, nil
}

// FullDuplexCall echoes each message's payload once the attempt is let
// through.
func (b *flakyBackend) FullDuplexCall(st testgrpc.TestService_FullDuplexCallServer) error {
	if err := b.attempt(st.Context()); err != nil {
		return err
	}
	for {
		req, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.Send(&testgrpc.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// startFlaky starts a flakyBackend, stopped when the test ends.
func startFlaky(t *testing.T, id string, f failure) *flakyBackend {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &flakyBackend{id: id, port: uint32(lis.Addr().(*net.TCPAddr).Port)}
	b.fail.Store(int32(f))
	serveOn(t, lis, b)
	return b
}

// retryRoute returns a route of prefix to cluster with a retry policy
// (gRFC A44) retrying UNAVAILABLE numRetries times.
func retryRoute(prefix, cluster string, numRetries uint32) *v3routepb.Route {
	rt := testutil.ClusterRoute(prefix, cluster)
	rt.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "unavailable,connect-failure", NumRetries: wrapperspb.UInt32(numRetries)}
	return rt
}

// serveRoutes serves the Listener "svc" with routes, and one cluster per
// backend, "cluster-<id>".
func serveRoutes(e *env, routes []*v3routepb.Route, bs ...*flakyBackend) {
	serveRoutesWith(e, routes, nil, bs...)
}

// serveRoutesWith is serveRoutes with the ClusterLoadAssignments in clas
// in place of the default ones of their backends ("eds-<id>").
func serveRoutesWith(e *env, routes []*v3routepb.Route, clas []*v3endpointpb.ClusterLoadAssignment, bs ...*flakyBackend) {
	r := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, routes...))},
	}
	for _, b := range bs {
		r.Clusters = append(r.Clusters, testutil.Cluster("cluster-"+b.id, "eds-"+b.id))
		cla := testutil.Endpoints("eds-"+b.id, "127.0.0.1", b.port)
		for _, c := range clas {
			if c.GetClusterName() == cla.GetClusterName() {
				cla = c
			}
		}
		r.Endpoints = append(r.Endpoints, cla)
	}
	e.ms.Update("", r)
}

// waitForRetries makes RPCs until n in a row succeed: the channel retries.
func waitForRetries(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient, n int) {
	t.Helper()
	var err error
	for ok := 0; ok < n; {
		if _, err = tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err == nil {
			ok++
		} else {
			ok = 0
		}
		if ctx.Err() != nil {
			t.Fatalf("RPCs are not retried: %v", err)
		}
	}
}

// TestResolver_E2E_Retries checks retries (gRFC A44) through what the
// resolver gives the channel, with NewBuilder alone and with DialOptions:
// gRPC's own retries (gRFC A6), unary and streaming.
//
//  1. Serve a route retrying UNAVAILABLE 3 times to a backend failing every other RPC before any header.
//  2. 100 unary RPCs and 20 bidi streams (two messages each) all succeed.
//  3. The backend saw retries, each with grpc-previous-rpc-attempts, never more than 3.
func TestResolver_E2E_Retries(t *testing.T) {
	for _, withInterceptors := range []bool{false, true} {
		t.Run("interceptors="+strconv.FormatBool(withInterceptors), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			a := startFlaky(t, "A", failOdd)
			e := newEnv(t, testutil.BootstrapOptions{}, nil)
			serveRoutes(e, []*v3routepb.Route{retryRoute("", "cluster-A", 3)}, a)
			var tc testgrpc.TestServiceClient
			if withInterceptors {
				tc = e.dialWithInterceptors(t, "xds:///svc")
			} else {
				tc, _ = e.dial(t, "xds:///svc")
			}
			waitForRetries(ctx, t, tc, 10)
			retries := a.retries.Load()
			const n = 100
			failed := 0
			for range n {
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
					failed++
					t.Logf("RPC failed: %v", err)
				}
			}
			if failed > n/100 {
				t.Errorf("%d of %d RPCs failed; want at most 1%%", failed, n)
			}
			if got := a.retries.Load() - retries; got < n/4 {
				t.Errorf("the backend saw %d retries for %d RPCs; want about %d", got, n, n/2)
			}
			if p := a.maxPrev.Load(); p < 1 || p > 3 {
				t.Errorf("largest grpc-previous-rpc-attempts = %d; want 1 to 3 (4 attempts at most)", p)
			}
			for i := range 20 {
				st, err := tc.FullDuplexCall(ctx)
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
		})
	}
}

// TestResolver_E2E_RetryPicksAgain checks that each attempt is picked
// anew (gRFC A44), so that a retry reaches another endpoint.
//
//  1. Serve a route retrying UNAVAILABLE once to a round-robin cluster of A (always failing) and B.
//  2. Every RPC succeeds on B; A saw first attempts.
func TestResolver_E2E_RetryPicksAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startFlaky(t, "A", failAlways), startFlaky(t, "B", failNever)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: []uint32{a.port, b.port}})
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, retryRoute("", "cluster-svc", 1)))}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	waitForRetries(ctx, t, tc, 10)
	calls := a.calls.Load()
	for i := range 100 {
		resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if err != nil || resp.GetServerId() != "B" {
			t.Fatalf("RPC %d: %v, %v; want success on B", i, resp, err)
		}
	}
	if a.calls.Load() == calls {
		t.Errorf("A saw no attempt; want round robin to send first attempts there too")
	}
}

// TestResolver_E2E_NoRetryAfterHeaders checks gRFC A6's commit rule: an
// RPC that received response headers is not retried.
//
//  1. Serve a route retrying UNAVAILABLE 3 times to a backend that sends headers, then fails UNAVAILABLE.
//  2. Each RPC fails UNAVAILABLE after one attempt.
func TestResolver_E2E_NoRetryAfterHeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, probe := startFlaky(t, "A", failAfterHeaders), startFlaky(t, "probe", failOdd)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	// EmptyCalls go to the probe, which tells when retries are on.
	serveRoutes(e, []*v3routepb.Route{retryRoute("/grpc.testing.TestService/UnaryCall", "cluster-probe", 3), retryRoute("", "cluster-A", 3)}, a, probe)
	tc, _ := e.dial(t, "xds:///svc")
	waitForRetries(ctx, t, tc, 10)
	for i := range 20 {
		calls := a.calls.Load()
		if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); status.Code(err) != codes.Unavailable {
			t.Fatalf("RPC %d: %v; want UNAVAILABLE", i, err)
		}
		if got := a.calls.Load() - calls; got != 1 {
			t.Fatalf("RPC %d: %d attempts; want 1 (headers were received)", i, got)
		}
	}
}

// TestResolver_E2E_RetryPolicyPerRoute checks that each route's policy
// (or the virtual host's) applies to its RPCs only: with NewBuilder
// alone, for routes that a method name tells apart (a path); with
// DialOptions, also for a route without policy that the service config
// cannot tell apart (a prefix, which other methods could match), whose
// RPCs the interceptors keep from being retried.
//
//  1. Serve: EmptyCall (by path, or by prefix) → cluster A without retry policy (the virtual host has none); the rest → cluster A retrying UNAVAILABLE twice. A always fails.
//  2. EmptyCall: one attempt. UnaryCall: three.
func TestResolver_E2E_RetryPolicyPerRoute(t *testing.T) {
	const emptyCall = "/grpc.testing.TestService/EmptyCall"
	for _, tt := range []struct {
		name             string
		emptyCallRoute   *v3routepb.Route
		withInterceptors bool
	}{
		{"path", &v3routepb.Route{
			Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Path{Path: emptyCall}},
			Action: testutil.ClusterRoute("", "cluster-A").GetAction(),
		}, false},
		{"prefix, interceptors", testutil.ClusterRoute(emptyCall, "cluster-A"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
			defer cancel()
			a := startFlaky(t, "A", failAlways)
			e := newEnv(t, testutil.BootstrapOptions{}, nil)
			serveRoutes(e, []*v3routepb.Route{tt.emptyCallRoute, retryRoute("", "cluster-A", 2)}, a)
			var tc testgrpc.TestServiceClient
			if tt.withInterceptors {
				tc = e.dialWithInterceptors(t, "xds:///svc")
			} else {
				tc, _ = e.dial(t, "xds:///svc")
			}
			for { // until UnaryCalls are retried
				calls := a.calls.Load()
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); status.Code(err) == codes.Unavailable && a.calls.Load()-calls == 3 {
					break
				}
				if ctx.Err() != nil {
					t.Fatal("UnaryCalls are not retried")
				}
			}
			for range 5 {
				calls := a.calls.Load()
				if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); status.Code(err) != codes.Unavailable {
					t.Fatalf("EmptyCall: %v; want UNAVAILABLE", err)
				}
				if got := a.calls.Load() - calls; got != 1 {
					t.Errorf("EmptyCall: %d attempts; want 1 (its route has no retry policy)", got)
				}
				calls = a.calls.Load()
				if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}); status.Code(err) != codes.Unavailable {
					t.Fatalf("UnaryCall: %v; want UNAVAILABLE", err)
				}
				if got := a.calls.Load() - calls; got != 3 {
					t.Errorf("UnaryCall: %d attempts; want 3 (num_retries 2)", got)
				}
			}
		})
	}
}
