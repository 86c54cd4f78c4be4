// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// edsChain returns the chain of the listener "svc" whose cluster-svc
// endpoints (eds-svc) are cla.
func edsChain(cla *v3endpointpb.ClusterLoadAssignment) testutil.Resources {
	r := testutil.Chain(testutil.ChainOptions{Listener: "svc"})
	cla.ClusterName = "eds-svc"
	r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{cla}
	return r
}

// weighted returns l with load_balancing_weight w.
func weighted(l *v3endpointpb.LocalityLbEndpoints, w uint32) *v3endpointpb.LocalityLbEndpoints {
	l.LoadBalancingWeight = wrapperspb.UInt32(w)
	return l
}

// TestResolver_E2E_LocalityWeights checks that RPCs are spread over the
// localities of a priority by locality weight (weighted target), whatever
// the number of endpoints in each.
//
//  1. Serve one cluster with locality z1 (weight 3: A) and z2 (weight 1: B, C).
//  2. 4000 RPCs: A 75 ± 3 %, B and C together 25 ± 3 %.
func TestResolver_E2E_LocalityWeights(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
		weighted(localityEndpoints("z1", 0, lbEndpoint(a.port, v3corepb.HealthStatus_HEALTHY)), 3),
		weighted(localityEndpoints("z2", 0, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY), lbEndpoint(c.port, v3corepb.HealthStatus_HEALTHY)), 1),
	}}))
	tc, _ := e.dial(t, "xds:///svc")
	for _, id := range []string{"A", "B", "C"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
	const n = 4000
	got := countServers(ctx, t, tc, classDefault, n)
	got["B+C"] = got["B"] + got["C"]
	t.Logf("split of %d RPCs: %v", n, got)
	checkShare(t, "locality", got, n, "A", 75, 3)
	checkShare(t, "locality", got, n, "B+C", 25, 3)
}

// TestResolver_E2E_Drops checks drop_overloads (gRFC A27): a category
// dropping 10 % of RPCs fails about 10 % of them with UNAVAILABLE before
// any pick, naming the category.
//
//  1. Serve one cluster (A, lrs_server self) whose ClusterLoadAssignment drops 10 % in category "throttle".
//  2. 4000 RPCs: 10 ± 2 % fail UNAVAILABLE naming "throttle"; the others reach A.
//  3. LRS reports exactly those drops, in category "throttle".
func TestResolver_E2E_Drops(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	cla := testutil.Endpoints("eds-svc", "127.0.0.1", a.port)
	cla.Policy = &v3endpointpb.ClusterLoadAssignment_Policy{DropOverloads: []*v3endpointpb.ClusterLoadAssignment_Policy_DropOverload{{
		Category:       "throttle",
		DropPercentage: &v3typepb.FractionalPercent{Numerator: 10, Denominator: v3typepb.FractionalPercent_HUNDRED},
	}}}
	r := edsChain(cla)
	r.Clusters[0].LrsServer = &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
	e.ms.Update("", r)
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{SendAllClusters: true})
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithLoadReportTransport(ls.TransportBuilder()))
	earlyDrops := 0 // while waiting for A; reported too
	for {
		id, err := unaryServerID(ctx, tc)
		if err == nil && id == "A" {
			break
		}
		if contains(err, `"throttle"`) {
			earlyDrops++
		}
		if ctx.Err() != nil {
			t.Fatalf("no RPC reached A: %v", err)
		}
	}
	const n = 4000
	dropped := 0
	for i := range n {
		id, err := unaryServerID(ctx, tc)
		switch {
		case err == nil && id == "A":
		case status.Code(err) == codes.Unavailable && contains(err, `"throttle"`):
			dropped++
		default:
			t.Fatalf("RPC %d: server %q, error %v; want A or a drop", i, id, err)
		}
	}
	if share := 100 * float64(dropped) / n; share < 8 || share > 12 {
		t.Errorf("%d of %d RPCs dropped (%.1f%%); want 10 ± 2%%", dropped, n, share)
	}
	// The drops are reported by category (gRFC A27).
	var inCategory, total uint64
	want := uint64(dropped + earlyDrops)
	for k := 1; inCategory < want; k++ {
		reqs, err := ls.WaitForRequests(ctx, k)
		if err != nil {
			t.Fatalf("LRS reports %d drops in category throttle (%d in all); want %d: %v", inCategory, total, want, err)
		}
		inCategory, total = 0, 0
		for _, req := range reqs {
			for _, cs := range req.GetClusterStats() {
				total += cs.GetTotalDroppedRequests()
				for _, d := range cs.GetDroppedRequests() {
					if d.GetCategory() == "throttle" {
						inCategory += d.GetDroppedCount()
					}
				}
			}
		}
	}
	if inCategory != want || total != want {
		t.Errorf("LRS reports %d drops in category throttle, %d in all; want %d", inCategory, total, want)
	}
}

// serveBreaker starts a backend A that holds each RPC, and a management
// server serving the chain to A with max_requests max.
func serveBreaker(t *testing.T, max uint32) (*backend, *env) {
	t.Helper()
	a := startBackendWith(t, &backend{id: "A", arrived: make(chan struct{}, 10), release: make(chan struct{})})
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a)
	r.Clusters[0].CircuitBreakers = &v3clusterpb.CircuitBreakers{Thresholds: []*v3clusterpb.CircuitBreakers_Thresholds{{
		Priority: v3corepb.RoutingPriority_DEFAULT, MaxRequests: wrapperspb.UInt32(max),
	}}}
	e.ms.Update("", r)
	return a, e
}

// TestResolver_E2E_CircuitBreaker checks max_requests (gRFC A32): with
// max_requests 2 and two RPCs in flight, a third fails at once with
// UNAVAILABLE; once they end, RPCs succeed again.
//
//  1. Serve one cluster with max_requests 2; its backend holds each RPC.
//  2. Start two RPCs; wait until the backend holds both.
//  3. A third RPC fails UNAVAILABLE naming max_requests.
//  4. Release: the two succeed, and a new RPC succeeds.
func TestResolver_E2E_CircuitBreaker(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, e := serveBreaker(t, 2)
	tc, _ := e.dial(t, "xds:///svc")

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tc.UnaryCall(ctx, nil)
			errs <- err
		}()
	}
	for range 2 {
		select {
		case <-a.arrived:
		case <-ctx.Done():
			t.Fatal("the backend did not receive two RPCs")
		}
	}
	_, err := tc.UnaryCall(ctx, nil)
	if status.Code(err) != codes.Unavailable || !contains(err, "max_requests") {
		t.Errorf("third concurrent RPC: %v; want UNAVAILABLE naming max_requests", err)
	}
	close(a.release)
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("held RPC: %v", err)
		}
	}
	if _, err := unaryServerID(ctx, tc); err != nil {
		t.Errorf("RPC after the held ones ended: %v", err)
	}
}

// TestResolver_E2E_FailoverTimer checks the priority failover of gRFC
// A56 with the failover timer faked: priority 0 stays CONNECTING (a
// listener that never speaks HTTP/2), so RPCs wait for it until its 10 s
// timer fires; then priority 1 serves them. When priority 0 becomes READY
// (its endpoint moved to a live backend), RPCs go back to it.
//
//  1. Serve priority 0: a silent listener; priority 1: B.
//  2. The router starts a 10 s failover timer for priority 0; fire it.
//  3. RPCs reach B.
//  4. Move priority 0's endpoint to A: RPCs reach A.
func TestResolver_E2E_FailoverTimer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	silent := silentListener(t)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
		localityEndpoints("z0", 0, lbEndpoint(silent, v3corepb.HealthStatus_HEALTHY)),
		localityEndpoints("z1", 1, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
	}}))
	timers := make(chan *xdsresolver.FakeTimer, 16)
	tc, cc := e.dial(t, "xds:///svc", xdsresolver.WithFakeTimers(timers))
	cc.Connect()
	var timer *xdsresolver.FakeTimer
	select {
	case timer = <-timers:
	case <-ctx.Done():
		t.Fatal("no failover timer started")
	}
	if timer.D.Seconds() != 10 {
		t.Errorf("failover timer of %v; want 10s", timer.D)
	}
	timer.Fire()
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "B", 20); err != nil {
		t.Fatal(err)
	}
	e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
		localityEndpoints("z0", 0, lbEndpoint(a.port, v3corepb.HealthStatus_HEALTHY)),
		localityEndpoints("z1", 1, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
	}}))
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "A", 20); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_FailoverOnFailure checks that a priority whose
// endpoints refuse connections (TRANSIENT_FAILURE) fails over at once,
// without waiting for the timer.
//
//  1. Serve priority 0: a closed port; priority 1: B.
//  2. RPCs reach B (no timer fired).
func TestResolver_E2E_FailoverOnFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	b := startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
		localityEndpoints("z0", 0, lbEndpoint(closedPort(t), v3corepb.HealthStatus_HEALTHY)),
		localityEndpoints("z1", 1, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
	}}))
	timers := make(chan *xdsresolver.FakeTimer, 16)
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithFakeTimers(timers))
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_LowerPriorityStartsLazily checks that a lower
// priority is not connected to while a higher one serves, and is started
// when the higher one fails (gRFC A56).
//
//  1. Serve priority 0: A; priority 1: a listener that counts connections.
//  2. 20 RPCs reach A; nothing connected to priority 1.
//  3. Move priority 0 to a closed port: the channel connects to priority 1.
func TestResolver_E2E_LowerPriorityStartsLazily(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	lower, accepted := countingSilentListener(t)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serve := func(p0 uint32) {
		e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
			localityEndpoints("z0", 0, lbEndpoint(p0, v3corepb.HealthStatus_HEALTHY)),
			localityEndpoints("z1", 1, lbEndpoint(lower, v3corepb.HealthStatus_HEALTHY)),
		}}))
	}
	serve(a.port)
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "A", 20); err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted:
		t.Fatal("the channel connected to priority 1 while priority 0 served")
	default:
	}
	serve(closedPort(t))
	select {
	case <-accepted:
	case <-ctx.Done():
		t.Fatal("priority 1 was not started when priority 0 failed")
	}
}

// silentListener returns the port of a listener that accepts connections
// and never answers, so that gRPC stays CONNECTING; closed when the test
// ends.
func silentListener(t *testing.T) uint32 {
	port, _ := countingSilentListener(t)
	return port
}

// countingSilentListener is silentListener, also returning a channel that
// receives a value per connection accepted (buffered; extra ones dropped).
func countingSilentListener(t *testing.T) (uint32, <-chan struct{}) {
	t.Helper()
	accepted := make(chan struct{}, 16)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return uint32(lis.Addr().(*net.TCPAddr).Port), accepted
}

// closedPort returns a port nothing listens on.
func closedPort(t *testing.T) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint32(lis.Addr().(*net.TCPAddr).Port)
	lis.Close()
	return port
}

// TestResolver_E2E_CircuitBreakerSharedByChannels checks that the
// channels of one Builder share the max_requests count of a cluster, as
// gRPC channels of one xDS client do (gRFC A32).
//
//  1. Serve one cluster with max_requests 2; its backend holds each RPC.
//  2. Two channels from one Builder each start one RPC; the backend holds both.
//  3. A third RPC, on either channel, fails UNAVAILABLE naming max_requests.
func TestResolver_E2E_CircuitBreakerSharedByChannels(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, e := serveBreaker(t, 2)
	b := xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t)))
	var tcs []testgrpc.TestServiceClient
	for range 2 {
		cc, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(b), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		tcs = append(tcs, testgrpc.NewTestServiceClient(cc))
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(a.release)
	for _, tc := range tcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		}()
	}
	for range 2 {
		select {
		case <-a.arrived:
		case <-ctx.Done():
			t.Fatal("the backend did not receive two RPCs")
		}
	}
	for i, tc := range tcs {
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if status.Code(err) != codes.Unavailable || !contains(err, "max_requests") {
			t.Errorf("third RPC, on channel %d: %v; want UNAVAILABLE naming max_requests", i, err)
		}
	}
}

// TestResolver_E2E_PriorityChildRetention checks the child retention of
// gRFC A56, with the timers faked: a lower priority that was used stays
// while a higher one serves again, until its 15-minute retention timer
// fires; then its children are closed, and it is started again on the
// next failover.
//
//  1. Serve priority 0: A; priority 1: B. RPCs reach A; B is not connected to.
//  2. Move priority 0 to a closed port: RPCs reach B.
//  3. Move priority 0 back to A: RPCs reach A; a 15 min retention timer started for priority 1; B's connection stays.
//  4. Fire it: B's connection is closed.
//  5. Move priority 0 to a closed port again: RPCs reach B on a new connection.
func TestResolver_E2E_PriorityChildRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	closed := closedPort(t)
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	serve := func(p0 uint32) {
		e.ms.Update("", edsChain(&v3endpointpb.ClusterLoadAssignment{Endpoints: []*v3endpointpb.LocalityLbEndpoints{
			localityEndpoints("z0", 0, lbEndpoint(p0, v3corepb.HealthStatus_HEALTHY)),
			localityEndpoints("z1", 1, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
		}}))
	}
	serve(a.port)
	timers := make(chan *xdsresolver.FakeTimer, 64)
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithFakeTimers(timers))
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	serve(closed)
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	serve(a.port)
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	var retention *xdsresolver.FakeTimer
	for retention == nil {
		select {
		case tm := <-timers:
			if tm.D == 15*time.Minute {
				retention = tm
			}
		case <-ctx.Done():
			t.Fatal("no 15 min child retention timer started for priority 1")
		}
	}
	if err := verifyServer(ctx, tc, "A", 10); err != nil {
		t.Fatal(err)
	}
	if got := b.closed.Load(); got != 0 || b.accepted.Load() != 1 {
		t.Fatalf("B's connections before the retention timer fired: %d accepted, %d closed; want 1 kept", b.accepted.Load(), got)
	}
	retention.Fire()
	for b.closed.Load() != 1 {
		select {
		case <-b.connClosed:
		case <-ctx.Done():
			t.Fatalf("B's connection not closed after the retention timer fired (%d closed)", b.closed.Load())
		}
	}
	serve(closed)
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if got := b.accepted.Load(); got != 2 {
		t.Errorf("B accepted %d connections; want 2 (priority 1 started again)", got)
	}
}
