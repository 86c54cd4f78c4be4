// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/metadata"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// TestResolver_E2E_RingHash checks that a RING_HASH cluster whose route
// hashes a header sends the RPCs carrying one value of the header to one
// endpoint, and spreads different values over the endpoints. It needs
// grpc's ring_hash balancer linked in: it skips until builder.go imports
// google.golang.org/grpc/balancer/ringhash, which needs
// github.com/cespare/xxhash/v2 in go.sum.
//
//  1. Serve a route to cluster-svc hashing the header x-user, cluster-svc
//     with lb_policy RING_HASH, and endpoints A and B.
//  2. For each of many users, RPCs with x-user: user reach one server.
//  3. Both servers get users.
func TestResolver_E2E_RingHash(t *testing.T) {
	if balancer.Get("ring_hash_experimental") == nil {
		t.Fatal("grpc's ring_hash balancer is not registered: package xdsresolver must import google.golang.org/grpc/balancer/ringhash")
	}
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a, b)
	route := testutil.ClusterRoute("", "cluster-svc")
	route.GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{{
		PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: &v3routepb.RouteAction_HashPolicy_Header{HeaderName: "x-user"}},
	}}
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, route))}
	c := testutil.Cluster("cluster-svc", "eds-svc")
	c.LbPolicy = v3clusterpb.Cluster_RING_HASH
	r.Clusters = []*v3clusterpb.Cluster{c}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")

	usersOf := map[string]int{}
	for i := 0; i < 40 && (usersOf["A"] == 0 || usersOf["B"] == 0); i++ {
		uctx := metadata.AppendToOutgoingContext(ctx, "x-user", fmt.Sprintf("user-%d", i))
		first, err := unaryServerID(uctx, tc)
		for err != nil && ctx.Err() == nil { // the first RPCs wait for connections
			first, err = unaryServerID(uctx, tc)
		}
		if err != nil {
			t.Fatalf("user-%d: %v", i, err)
		}
		if err := verifyServer(uctx, tc, first, 5); err != nil {
			t.Fatalf("user-%d, first answered by %s: %v", i, first, err)
		}
		usersOf[first]++
	}
	if usersOf["A"] == 0 || usersOf["B"] == 0 {
		t.Errorf("users per server = %v, want both servers to have some", usersOf)
	}
}

// TestResolver_E2E_RingHashPerRoute checks that the hash of each RPC
// comes from the hash policies of the route it matches (gRFC A42), which
// a single ring_hash requestHashHeader cannot express: two routes to one
// RING_HASH cluster, one hashing two headers, one hashing the channel ID.
//
//  1. Serve: EmptyCall → cluster-svc hashing the channel ID; other RPCs → cluster-svc hashing x-a then x-b; endpoints A, B, C.
//  2. Many EmptyCalls with different headers all reach one server.
//  3. UnaryCalls with one (x-a, x-b) pair reach one server; pairs differing only in x-b reach more than one server.
func TestResolver_E2E_RingHashPerRoute(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a, b, c)
	hdr := func(name string) *v3routepb.RouteAction_HashPolicy {
		return &v3routepb.RouteAction_HashPolicy{PolicySpecifier: &v3routepb.RouteAction_HashPolicy_Header_{Header: &v3routepb.RouteAction_HashPolicy_Header{HeaderName: name}}}
	}
	byChannel := testutil.ClusterRoute("", "cluster-svc")
	byChannel.Match.PathSpecifier = &v3routepb.RouteMatch_Path{Path: "/grpc.testing.TestService/EmptyCall"}
	byChannel.GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{{
		PolicySpecifier: &v3routepb.RouteAction_HashPolicy_FilterState_{FilterState: &v3routepb.RouteAction_HashPolicy_FilterState{Key: "io.grpc.channel_id"}},
	}}
	byHeaders := testutil.ClusterRoute("", "cluster-svc")
	byHeaders.GetRoute().HashPolicy = []*v3routepb.RouteAction_HashPolicy{hdr("x-a"), hdr("x-b")}
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, byChannel, byHeaders))}
	cl := testutil.Cluster("cluster-svc", "eds-svc")
	cl.LbPolicy = v3clusterpb.Cluster_RING_HASH
	r.Clusters = []*v3clusterpb.Cluster{cl}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")

	// firstServer makes RPCs until one succeeds (the first ones wait for
	// connections) and returns its server.
	firstServer := func(ctx context.Context, class string) string {
		t.Helper()
		for {
			id, err := canaryCall(ctx, tc, class)
			if err == nil {
				return id
			}
			if ctx.Err() != nil {
				t.Fatalf("%s RPC: %v", class, err)
			}
		}
	}
	channelServer := firstServer(ctx, classMethod)
	for i := range 30 {
		uctx := metadata.AppendToOutgoingContext(ctx, "x-a", fmt.Sprint(i), "x-b", fmt.Sprint(i))
		if got := firstServer(uctx, classMethod); got != channelServer {
			t.Fatalf("EmptyCall %d (channel ID hash) reached %s; want %s like the first", i, got, channelServer)
		}
	}
	servers := map[string]bool{}
	for i := 0; i < 40 && len(servers) < 2; i++ {
		uctx := metadata.AppendToOutgoingContext(ctx, "x-a", "same", "x-b", fmt.Sprint(i))
		first := firstServer(uctx, classDefault)
		if err := verifyServer(uctx, tc, first, 5); err != nil {
			t.Fatalf("x-b %d, first answered by %s: %v", i, first, err)
		}
		servers[first] = true
	}
	if len(servers) < 2 {
		t.Errorf("RPCs differing in x-b only all reached %v; want the second header hashed too", servers)
	}
}
