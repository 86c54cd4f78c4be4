// SPDX-License-Identifier: Apache-2.0

package resolver_test

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
		t.Fatal("grpc's ring_hash balancer is not registered: package resolver must import google.golang.org/grpc/balancer/ringhash")
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
