// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// End-to-end tests: real gRPC servers on 127.0.0.1, the testutil
// management server, a client, and a grpc.ClientConn dialing xds:///svc
// through the resolver.

// TestResolver_E2E_RPCsSucceed checks that RPCs to xds:///svc reach the
// endpoint of the Listener's cluster.
//
//  1. Start backend A, and a management server with the chain
//     svc → route-svc → cluster-svc → eds-svc = [A].
//  2. Dial xds:///svc: RPCs succeed, answered by A.
func TestResolver_E2E_RPCsSucceed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))

	tc, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, tc, "A", 5); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_RoundRobin checks that the channel balances over the
// cluster's endpoints with round_robin, the service config the resolver
// gives it for lb_policy ROUND_ROBIN: without it, the channel would use
// pick_first and send every RPC to one server.
//
//  1. Serve the chain with endpoints A and B.
//  2. Consecutive RPCs alternate between A and B.
func TestResolver_E2E_RoundRobin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a, b))
	tc, _ := e.dial(t, "xds:///svc")
	// Once both are connected, round_robin alternates.
	for _, id := range []string{"A", "B"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
	prev, err := unaryServerID(ctx, tc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		got, err := unaryServerID(ctx, tc)
		if err != nil {
			t.Fatal(err)
		}
		if got == prev {
			t.Fatalf("RPC %d answered by %s, as the one before: not round robin", i, got)
		}
		prev = got
	}
}

// TestResolver_E2E_EDSUpdateMovesEndpoint checks that new RPCs follow an
// EDS update.
//
//  1. Serve the chain with endpoint A; RPCs reach A.
//  2. Update the ClusterLoadAssignment to endpoint B only.
//  3. RPCs reach B, then only B.
func TestResolver_E2E_EDSUpdateMovesEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	tc, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}

	e.ms.Update("", chain(b))
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "B", 10); err != nil {
		t.Fatalf("after the move: %v", err)
	}
}

// TestResolver_E2E_PriorityFailover checks that when every endpoint of
// priority 0 is UNHEALTHY, RPCs go to priority 1, and back when one
// recovers.
//
//  1. Serve eds-svc with A (UNHEALTHY) in priority 0 and B (HEALTHY) in
//     priority 1: RPCs reach B only.
//  2. Mark A HEALTHY: RPCs reach A, then only A.
func TestResolver_E2E_PriorityFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	withHealthOfA := func(h v3corepb.HealthStatus) testutil.Resources {
		r := chain(a)
		r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{{
			ClusterName: "eds-svc",
			Endpoints: []*v3endpointpb.LocalityLbEndpoints{
				localityEndpoints("z0", 0, lbEndpoint(a.port, h)),
				localityEndpoints("z1", 1, lbEndpoint(b.port, v3corepb.HealthStatus_HEALTHY)),
			},
		}}
		return r
	}
	e.ms.Update("", withHealthOfA(v3corepb.HealthStatus_UNHEALTHY))
	tc, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, tc, "B", 10); err != nil {
		t.Fatalf("with priority 0 UNHEALTHY: %v", err)
	}

	e.ms.Update("", withHealthOfA(v3corepb.HealthStatus_HEALTHY))
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "A", 10); err != nil {
		t.Fatalf("with priority 0 HEALTHY again: %v", err)
	}
}

// waitForFailure makes RPCs until one fails with code and a message
// containing every string of want.
func waitForFailure(ctx context.Context, t *testing.T, call func() error, code codes.Code, want ...string) {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		err := call()
		last = err
		if status.Code(err) != code {
			continue
		}
		matched := true
		for _, w := range want {
			if !strings.Contains(status.Convert(err).Message(), w) {
				matched = false
			}
		}
		if matched {
			t.Logf("RPC failed as expected: %v", err)
			return
		}
	}
	t.Fatalf("no RPC failed with %v and a message containing %q before the deadline; last RPC: %v", code, want, last)
}

// TestResolver_E2E_ListenerDeleted checks that RPCs fail with UNAVAILABLE,
// naming the Listener, once the management server deletes it, although the
// channel had a working endpoint; and that they succeed again once it is
// back.
//
//  1. Serve the chain to A; RPCs reach A.
//  2. Serve the same resources without the Listener (a SotW deletion).
//  3. RPCs fail with UNAVAILABLE, naming the target and the Listener.
//  4. Serve the Listener again: RPCs reach A.
func TestResolver_E2E_ListenerDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	full := chain(a)
	e.ms.Update("", full)
	tc, _ := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}

	noListener := full
	noListener.Listeners = nil
	e.ms.Update("", noListener)
	call := func() error { _, err := unaryServerID(ctx, tc); return err }
	waitForFailure(ctx, t, call, codes.Unavailable, "xds:///svc", `Listener "svc"`, "resource does not exist")
	// Every RPC fails from then on, not only some.
	for i := range 5 {
		if err := call(); status.Code(err) != codes.Unavailable {
			t.Fatalf("RPC %d after the deletion: %v, want UNAVAILABLE", i, err)
		}
	}

	e.ms.Update("", full)
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatalf("after the Listener came back: %v", err)
	}
}

// TestResolver_E2E_FirstRPCNamesTheError checks that the first RPC of a
// new channel whose configuration is unusable (its RouteConfiguration is
// NACKed: a route names the cluster "") fails with UNAVAILABLE naming the
// target and the resource, on a channel of DialOptions (whose
// interceptors hold the RPC until the resolver's first result) and of
// NewBuilder alone; not with pick_first's "produced zero addresses",
// which the resolver's failure State gave them before the error reached
// grpc's balancer.
func TestResolver_E2E_FirstRPCNamesTheError(t *testing.T) {
	ctx := testContext(t)
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	r := chain(a)
	r.Routes[0].VirtualHosts[0].Routes[0].GetRoute().ClusterSpecifier = &v3routepb.RouteAction_Cluster{Cluster: ""}
	if err := e.ms.Update("", r); err != nil {
		t.Fatal(err)
	}
	newBuilder, _ := e.dial(t, "xds:///svc")
	for name, tc := range map[string]testgrpc.TestServiceClient{
		"DialOptions": e.dialWithInterceptors(t, "xds:///svc"),
		"NewBuilder":  newBuilder,
	} {
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		if !isUnavailableWith(err, `xds:///svc: xds: RouteConfiguration "route-svc": resource invalid`) {
			t.Errorf("%s: first RPC: %v; want UNAVAILABLE naming the target and the RouteConfiguration", name, err)
		}
	}
}

// TestResolver_E2E_NoUsableEndpoints checks that RPCs fail with
// UNAVAILABLE, naming the cluster and the health statuses, when no
// endpoint of the cluster is usable.
//
//  1. Serve eds-svc with A UNHEALTHY and B DRAINING.
//  2. RPCs fail with UNAVAILABLE naming cluster-svc, UNHEALTHY, DRAINING.
//  3. Mark B HEALTHY: RPCs reach B.
func TestResolver_E2E_NoUsableEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	withHealthOfB := func(h v3corepb.HealthStatus) testutil.Resources {
		r := chain(a)
		r.Endpoints = []*v3endpointpb.ClusterLoadAssignment{{
			ClusterName: "eds-svc",
			Endpoints: []*v3endpointpb.LocalityLbEndpoints{
				localityEndpoints("z0", 0, lbEndpoint(a.port, v3corepb.HealthStatus_UNHEALTHY), lbEndpoint(b.port, h)),
			},
		}}
		return r
	}
	e.ms.Update("", withHealthOfB(v3corepb.HealthStatus_DRAINING))
	tc, _ := e.dial(t, "xds:///svc")
	call := func() error { _, err := unaryServerID(ctx, tc); return err }
	waitForFailure(ctx, t, call, codes.Unavailable, `cluster "cluster-svc"`, "no usable endpoints", "1 UNHEALTHY, 1 DRAINING")

	e.ms.Update("", withHealthOfB(v3corepb.HealthStatus_HEALTHY))
	if err := waitForServer(ctx, tc, "B"); err != nil {
		t.Fatal(err)
	}
	if err := verifyServer(ctx, tc, "B", 5); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_CloseCancelsWatches checks that closing the
// ClientConn closes the resolver, which cancels every watch: the client
// then unsubscribes from the Listener, RouteConfiguration, Cluster and
// ClusterLoadAssignment, as the server's recorded requests show.
//
//  1. Serve the chain; RPCs reach A, so all four types are subscribed.
//  2. Close the ClientConn.
//  3. Every watch is cancelled: the client closes its ADS stream.
func TestResolver_E2E_CloseCancelsWatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	tc, cc := e.dial(t, "xds:///svc")
	if err := verifyServer(ctx, tc, "A", 1); err != nil {
		t.Fatal(err)
	}

	cc.Close()

	// nothing is watched any more, so the ADS stream is closed.
	if err := e.ms.WaitForOpenStreams(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_WeightedClusters checks that a route with weighted
// clusters sends RPCs to the endpoints of both clusters.
//
//  1. Serve a route splitting svc between cluster-a (A) and cluster-b (B).
//  2. RPCs reach A and B.
func TestResolver_E2E_WeightedClusters(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b := startBackend(t, "A"), startBackend(t, "B")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", testutil.Resources{
		Listeners: chain(a).Listeners,
		Routes: []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc",
			testutil.VirtualHost("vh", []string{"svc"}, testutil.WeightedClustersRoute("",
				testutil.ClusterWeight{Name: "cluster-a", Weight: 1}, testutil.ClusterWeight{Name: "cluster-b", Weight: 3})))},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", ""), testutil.Cluster("cluster-b", "")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{testutil.Endpoints("cluster-a", "127.0.0.1", a.port), testutil.Endpoints("cluster-b", "127.0.0.1", b.port)},
	})
	tc, _ := e.dial(t, "xds:///svc")
	for _, id := range []string{"A", "B"} {
		if err := waitForServer(ctx, tc, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResolver_E2E_LogicalDNS checks a LOGICAL_DNS cluster, resolved by
// the DNS resolver given through WithDepMgrOptions, and that ResolveNow
// reaches it.
//
//  1. Serve a route to a LOGICAL_DNS cluster for backend.example:<port of A>.
//  2. Dial with a DNS resolver that maps backend.example to 127.0.0.1.
//  3. RPCs reach A.
func TestResolver_E2E_LogicalDNS(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", testutil.Resources{
		Listeners: chain(a).Listeners,
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", "dns")},
		Clusters:  []*v3clusterpb.Cluster{testutil.LogicalDNSCluster("dns", "backend.example", a.port)},
	})
	dns := &fakeDNS{addrs: map[string][]string{"backend.example": {"127.0.0.1"}}}
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithDepMgrOptions(depmgr.WithDNSResolver(dns)))
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}
}

// fakeDNS is a depmgr.DNSResolver with fixed answers: addrs[host], or,
// from the second lookup of host on, later[host] when set.
type fakeDNS struct {
	addrs map[string][]string
	later map[string][]string

	mu      sync.Mutex
	lookups map[string]int // guarded by mu
}

func (f *fakeDNS) LookupHost(_ context.Context, host string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lookups == nil {
		f.lookups = make(map[string]int)
	}
	f.lookups[host]++
	if a, ok := f.later[host]; ok && f.lookups[host] > 1 {
		return a, nil
	}
	if a, ok := f.addrs[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestResolver_E2E_ResolveNow checks that the channel's re-resolution
// requests reach the DNS lookups of LOGICAL_DNS clusters: the refresh
// interval (30 s) is far longer than the test, so only ResolveNow can
// bring the second address.
//
//  1. Serve a route to a LOGICAL_DNS cluster for backend.example:<port of A>.
//  2. The DNS resolver answers 127.0.0.2 first (nothing listens there on
//     that port), then 127.0.0.1.
//  3. The connection fails, the channel asks for re-resolution, and RPCs
//     reach A.
func TestResolver_E2E_ResolveNow(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", testutil.Resources{
		Listeners: chain(a).Listeners,
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", "dns")},
		Clusters:  []*v3clusterpb.Cluster{testutil.LogicalDNSCluster("dns", "backend.example", a.port)},
	})
	dns := &fakeDNS{
		addrs: map[string][]string{"backend.example": {"127.0.0.2"}},
		later: map[string][]string{"backend.example": {"127.0.0.1"}},
	}
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithDepMgrOptions(depmgr.WithDNSResolver(dns)))
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
}

// TestResolver_E2E_AmbientErrorKeepsState checks that an ambient error
// (here a NACKed update of the Listener in use) leaves the channel with
// its endpoints.
//
//  1. Serve the chain to A; RPCs reach A.
//  2. Serve an invalid Listener (no api_listener): the client NACKs it and
//     the resolver gets an ambient error (seen in its log).
//  3. RPCs still reach A.
func TestResolver_E2E_AmbientErrorKeepsState(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	good := chain(a)
	e.ms.Update("", good)
	logs := &logWatcher{t: t, want: "keeping the last configuration", seen: make(chan struct{})}
	tc, _ := e.dial(t, "xds:///svc", xdsresolver.WithLogger(slog.New(logs)))
	if err := verifyServer(ctx, tc, "A", 3); err != nil {
		t.Fatal(err)
	}

	bad := good
	bad.Listeners = []*v3listenerpb.Listener{{Name: "svc"}}
	e.ms.Update("", bad)
	select {
	case <-logs.seen:
	case <-ctx.Done():
		t.Fatal("the resolver logged no ambient error")
	}
	if err := verifyServer(ctx, tc, "A", 10); err != nil {
		t.Fatalf("after the ambient error: %v", err)
	}
}

// logWatcher is a slog.Handler that logs to t and closes seen the first
// time a record's message contains want.
type logWatcher struct {
	t    *testing.T
	want string
	seen chan struct{}
	once sync.Once
}

func (l *logWatcher) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatcher) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logWatcher) WithGroup(string) slog.Handler            { return l }

func (l *logWatcher) Handle(_ context.Context, r slog.Record) error {
	l.t.Logf("%s %s", r.Level, r.Message)
	if strings.Contains(r.Message, l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return nil
}

// TestResolver_E2E_DisableServiceConfig checks that a channel made with
// grpc.WithDisableServiceConfig fails its RPCs with an error that says
// the resolver needs service configs, rather than an opaque one.
//
//  1. Serve the chain with backend A.
//  2. Dial with grpc.WithDisableServiceConfig.
//  3. An RPC fails, its message naming ErrServiceConfigDisabled's text.
func TestResolver_E2E_DisableServiceConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a := startBackend(t, "A")
	e := newEnv(t, testutil.BootstrapOptions{}, nil)
	e.ms.Update("", chain(a))
	cc, err := grpc.NewClient("xds:///svc",
		grpc.WithResolvers(xdsresolver.NewBuilder(e.client, xdsresolver.WithLogger(testLogger(t)))),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableServiceConfig())
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	defer cc.Close()
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err == nil || !strings.Contains(err.Error(), xdsresolver.ErrServiceConfigDisabled.Error()) {
		t.Fatalf("RPC error = %v; want one containing %q", err, xdsresolver.ErrServiceConfigDisabled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RPC waited for its deadline: %v", err)
	}
}
