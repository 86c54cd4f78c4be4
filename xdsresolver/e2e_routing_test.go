// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// The classes of RPCs of the canary scenario (testutil.Canary).
const (
	classCanary  = "canary"  // UnaryCall with x-canary: true → B
	classMethod  = "method"  // EmptyCall → C
	classDefault = "default" // UnaryCall → A 80 %, B 20 %
)

// canaryCall makes one RPC of class and returns the ID of the server that
// answered.
func canaryCall(ctx context.Context, tc testgrpc.TestServiceClient, class string) (string, error) {
	switch class {
	case classCanary:
		return unaryServerID(metadata.AppendToOutgoingContext(ctx, "x-canary", "true"), tc)
	case classMethod:
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var hdr metadata.MD
		if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&hdr)); err != nil {
			return "", err
		}
		if ids := hdr.Get("server-id"); len(ids) == 1 {
			return ids[0], nil
		}
		return "", fmt.Errorf("EmptyCall answered without server-id header (%v)", hdr)
	default:
		return unaryServerID(ctx, tc)
	}
}

// countServers makes n RPCs of class and counts them by server ID; an
// RPC failing fails the test.
func countServers(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient, class string, n int) map[string]int {
	t.Helper()
	got := make(map[string]int)
	for i := range n {
		id, err := canaryCall(ctx, tc, class)
		if err != nil {
			t.Fatalf("%s RPC %d of %d: %v", class, i+1, n, err)
		}
		got[id]++
	}
	return got
}

// checkShare checks that got[id] is want ± tol percent of n.
func checkShare(t *testing.T, class string, got map[string]int, n int, id string, want, tol float64) {
	t.Helper()
	share := 100 * float64(got[id]) / float64(n)
	if share < want-tol || share > want+tol {
		t.Errorf("%s RPCs: server %s got %.1f%% (%v of %d); want %.0f ± %.0f%%", class, id, share, got, n, want, tol)
	}
}

// waitForCanary waits until RPCs of every class succeed and the default
// class has reached A and B: every child is READY.
func waitForCanary(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient) {
	t.Helper()
	for _, w := range []struct{ class, id string }{{classCanary, "B"}, {classMethod, "C"}, {classDefault, "A"}, {classDefault, "B"}} {
		var last error
		for {
			id, err := canaryCall(ctx, tc, w.class)
			if err == nil && id == w.id {
				break
			}
			last = fmt.Errorf("server %q, error %v", id, err)
			if ctx.Err() != nil {
				t.Fatalf("no %s RPC reached %s: last %v", w.class, w.id, last)
			}
		}
	}
}

// TestResolver_E2E_CanarySplit checks per-RPC routing and weighted
// clusters (gRFC A28) over real gRPC: three backends, routes by header,
// by method path, and a weighted split.
//
//  1. Serve testutil.Canary: x-canary: true → B; EmptyCall → C; else A 80 / B 20.
//  2. 2000 RPCs per class: canary all on B, method all on C; 4000 default: 80 ± 3 % on A, 20 ± 3 % on B.
func TestResolver_E2E_CanarySplit(t *testing.T) {
	// 8,000 RPCs one after another: under -race on a busy 2-core machine
	// they take 8 to 10 s, so the bound is well above defaultTestTimeout.
	ctx, cancel := context.WithTimeout(t.Context(), 6*defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port}))
	tc, _ := e.dial(t, "xds:///svc")
	waitForCanary(ctx, t, tc)

	const n = 2000
	if got := countServers(ctx, t, tc, classCanary, n); got["B"] != n {
		t.Errorf("canary RPCs: %v; want all %d on B", got, n)
	}
	if got := countServers(ctx, t, tc, classMethod, n); got["C"] != n {
		t.Errorf("method RPCs: %v; want all %d on C", got, n)
	}
	// Twice as many for the split: ±3 points are then over 4σ.
	got := countServers(ctx, t, tc, classDefault, 2*n)
	t.Logf("default split of %d RPCs: %v", 2*n, got)
	if got["A"]+got["B"] != 2*n {
		t.Errorf("default RPCs: %v; want only A and B", got)
	}
	checkShare(t, classDefault, got, 2*n, "A", 80, 3)
	checkShare(t, classDefault, got, 2*n, "B", 20, 3)
}

// TestResolver_E2E_NoRouteMatches checks that an RPC matching no route,
// or matching a non_forwarding route, fails with UNAVAILABLE, while the
// other RPCs of the channel succeed.
//
//  1. Serve routes: EmptyCall → non_forwarding; header x-go: yes → A; nothing else.
//  2. UnaryCall with x-go: yes succeeds; UnaryCall without fails UNAVAILABLE "matches no route"; EmptyCall fails UNAVAILABLE "non_forwarding".
func TestResolver_E2E_NoRouteMatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a)
	nf := &v3routepb.Route{
		Match:  &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Path{Path: "/grpc.testing.TestService/EmptyCall"}},
		Action: &v3routepb.Route_NonForwardingAction{NonForwardingAction: &v3routepb.NonForwardingAction{}},
	}
	toA := testutil.ClusterRoute("", "cluster-svc")
	//lint:ignore SA1019 gRPC still honours the deprecated exact_match form (A28), which control planes send.
	toA.Match.Headers = []*v3routepb.HeaderMatcher{{Name: "x-go", HeaderMatchSpecifier: &v3routepb.HeaderMatcher_ExactMatch{ExactMatch: "yes"}}}
	r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, nf, toA))}
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(metadata.AppendToOutgoingContext(ctx, "x-go", "yes"), tc, "A"); err != nil {
		t.Fatal(err)
	}
	_, err := unaryServerID(ctx, tc)
	if status.Code(err) != codes.Unavailable || !contains(err, "matches no route") {
		t.Errorf("UnaryCall without header: %v; want UNAVAILABLE, matches no route", err)
	}
	_, err = tc.EmptyCall(ctx, &testgrpc.Empty{})
	if status.Code(err) != codes.Unavailable || !contains(err, "non_forwarding") {
		t.Errorf("EmptyCall: %v; want UNAVAILABLE, non_forwarding", err)
	}
}

// contains reports whether err's status message contains s.
func contains(err error, s string) bool {
	return err != nil && strings.Contains(status.Convert(err).Message(), s)
}

// TestResolver_E2E_UpdatesWithoutFailures checks that changes of routes,
// weights and endpoints take effect within a second and that no RPC fails
// meanwhile (issue item 7).
//
//  1. Serve the canary scenario; RPCs of every class run in the background.
//  2. Route the default class to C only (weights A 0, B 0 → a route to C): within 1 s RPCs reach only C.
//  3. Move cluster-c's endpoint to D: within 1 s method RPCs reach D.
//  4. Weights back to A 50 / B 50: within 1 s default RPCs reach A again.
//  5. No background RPC failed.
func TestResolver_E2E_UpdatesWithoutFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c, d := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C"), startBackend(t, "D")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	opts := testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port}
	e.ms.Update("", testutil.Canary(opts))
	tc, _ := e.dial(t, "xds:///svc")
	waitForCanary(ctx, t, tc)

	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		firstErr atomic.Value
		stop     = make(chan struct{})
	)
	for _, class := range []string{classCanary, classMethod, classDefault} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := canaryCall(ctx, tc, class); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("%s RPC: %w", class, err))
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		if n := failures.Load(); n > 0 {
			t.Errorf("%d background RPCs failed during the updates; first: %v", n, firstErr.Load())
		}
	}()

	within := func(what, class, id string) {
		t.Helper()
		start := time.Now()
		for {
			got, err := canaryCall(ctx, tc, class)
			if err == nil && got == id {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: no %s RPC reached %s", what, class, id)
			}
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%s took %v; want ≤ 1s", what, el)
		}
	}

	// 2. Default → C only.
	r := testutil.Canary(opts)
	vh := r.Routes[0].VirtualHosts[0]
	vh.Routes[2] = testutil.ClusterRoute("", "cluster-c")
	e.ms.Update("", r)
	within("route change", classDefault, "C")
	if got := countServers(ctx, t, tc, classDefault, 100); got["C"] != 100 {
		t.Errorf("after the route change, default RPCs: %v; want all on C", got)
	}

	// 3. cluster-c's endpoint moves to D.
	r.Endpoints[2] = testutil.Endpoints("cluster-c", "127.0.0.1", d.port)
	e.ms.Update("", r)
	within("endpoint change", classMethod, "D")
	if got := countServers(ctx, t, tc, classMethod, 100); got["D"] != 100 {
		t.Errorf("after the endpoint change, method RPCs: %v; want all on D", got)
	}

	// 4. Weights 50 / 50 again for the default class.
	opts.WeightA, opts.WeightB = 50, 50
	r2 := testutil.Canary(opts)
	r2.Endpoints = r.Endpoints
	e.ms.Update("", r2)
	within("weight change", classDefault, "A")
}

// TestResolver_E2E_ClusterErrorFailsOnlyItsRPCs checks that a cluster
// without usable endpoints fails the RPCs routed to it, with UNAVAILABLE
// naming it, and no others (gRFC A74).
//
//  1. Serve the canary scenario with no endpoint in cluster-c.
//  2. Canary RPCs reach B; EmptyCall fails UNAVAILABLE naming cluster-c.
func TestResolver_E2E_ClusterErrorFailsOnlyItsRPCs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: 1})
	r.Endpoints[2] = testutil.Endpoints("cluster-c", "127.0.0.1")
	e.ms.Update("", r)
	tc, _ := e.dial(t, "xds:///svc")
	for {
		id, err := canaryCall(ctx, tc, classCanary)
		if err == nil && id == "B" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("canary RPC: %v", err)
		}
	}
	_, err := canaryCall(ctx, tc, classMethod)
	if status.Code(err) != codes.Unavailable || !contains(err, `"cluster-c"`) {
		t.Errorf("EmptyCall to the missing cluster: %v; want UNAVAILABLE naming cluster-c", err)
	}
	if got := countServers(ctx, t, tc, classCanary, 20); got["B"] != 20 {
		t.Errorf("canary RPCs: %v; want all on B", got)
	}
}

// routeTo returns the Listener "svc" routing every RPC to cluster, whose
// endpoint is b; other clusters are not in the snapshot.
func routeTo(cluster string, b *backend) testutil.Resources {
	return testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", cluster)},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster(cluster, "eds-"+cluster)},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("eds-"+cluster, "127.0.0.1", b.port)},
	}
}

// emptyCallServer makes one EmptyCall (never held by the backends) and
// returns the ID of the server that answered.
func emptyCallServer(ctx context.Context, tc testgrpc.TestServiceClient) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var md metadata.MD
	if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}, grpc.Header(&md)); err != nil {
		return "", err
	}
	return strings.Join(md.Get("server-id"), ","), nil
}

// waitForEmptyCallServer makes EmptyCalls until server id answers one.
func waitForEmptyCallServer(ctx context.Context, t *testing.T, tc testgrpc.TestServiceClient, id string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		got, err := emptyCallServer(ctx, tc)
		if err == nil && got == id {
			return
		}
		last = fmt.Sprintf("server %q, error %v", got, err)
	}
	t.Fatalf("no EmptyCall reached server %q; last: %s", id, last)
}

// TestResolver_E2E_InFlightRPCKeepsCluster checks that a cluster's child
// balancer stays while an RPC picked for it is in flight, after a route
// update removed the cluster (as gRPC's cluster manager keeps a child its
// config selector refers to, gRFC A28, A31), and is closed when the RPC
// ends:
//
//  1. Route every RPC to cluster-a (backend A, which holds UnaryCalls); start a UnaryCall on A.
//  2. Route to cluster-b (B); cluster-a is gone from the snapshot; new RPCs reach B.
//  3. Route back to cluster-a: new RPCs reach A over the connection of the kept child (A accepted 1 connection; a new child would open a second).
//  4. Route to cluster-b again; release the held RPC: it succeeds, served by A.
//  5. A's connection is then closed (the child was closed when its last RPC ended).
func TestResolver_E2E_InFlightRPCKeepsCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackendWith(t, &backend{id: "A", arrived: make(chan struct{}, 1), release: make(chan struct{})})
	b := startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", routeTo("cluster-a", a))
	tc, _ := e.dial(t, "xds:///svc")
	waitForEmptyCallServer(ctx, t, tc, "A")

	held := make(chan error, 1)
	go func() {
		resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if err == nil && resp.GetServerId() != "A" {
			err = fmt.Errorf("served by %q", resp.GetServerId())
		}
		held <- err
	}()
	select {
	case <-a.arrived:
	case <-ctx.Done():
		t.Fatal("the UnaryCall did not reach A")
	}

	e.ms.Update("", routeTo("cluster-b", b))
	waitForEmptyCallServer(ctx, t, tc, "B")
	e.ms.Update("", routeTo("cluster-a", a))
	waitForEmptyCallServer(ctx, t, tc, "A")
	if got := a.accepted.Load(); got != 1 {
		t.Errorf("A accepted %d connections; want 1: the child of cluster-a, kept for the RPC in flight, serves it again", got)
	}

	e.ms.Update("", routeTo("cluster-b", b))
	waitForEmptyCallServer(ctx, t, tc, "B")
	if got := a.closed.Load(); got != 0 {
		t.Errorf("A's connections closed while an RPC is in flight: %d", got)
	}
	close(a.release)
	if err := <-held; err != nil {
		t.Fatalf("the RPC in flight on cluster-a: %v; want success", err)
	}
	for a.closed.Load() != a.accepted.Load() {
		select {
		case <-a.connClosed:
		case <-ctx.Done():
			t.Fatalf("A's connections: %d accepted, %d closed after the RPC ended; want all closed (cluster-a's child closed)", a.accepted.Load(), a.closed.Load())
		}
	}
}
