// SPDX-License-Identifier: Apache-2.0

package resolver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/resolver"
	"github.com/proxyless/xds/testutil"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
)

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
		grpc.WithResolvers(resolver.NewBuilder(e.client, resolver.WithLogger(testLogger(t)))),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDisableServiceConfig())
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	defer cc.Close()
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err == nil || !strings.Contains(err.Error(), resolver.ErrServiceConfigDisabled.Error()) {
		t.Fatalf("RPC error = %v; want one containing %q", err, resolver.ErrServiceConfigDisabled)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RPC waited for its deadline: %v", err)
	}
}

// countingProxy is a TCP proxy to target that counts the connections it
// accepts; it is closed when the test ends.
type countingProxy struct {
	addr     string
	accepted atomic.Int64
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	p := &countingProxy{addr: lis.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := lis.Accept()
			if err != nil {
				return // closed at the end of the test
			}
			p.accepted.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// TestResolver_E2E_LoadReportOnADSConnection checks that, by default,
// load is reported on the client's ADS connection: the
// management server also serves LRS, behind a proxy that counts
// connections; after the LRS server got reports for cluster-a, the
// proxy has accepted one connection only.
//
//  1. Serve testutil.Canary with LRSOnA from a management server that also serves LRS, through a counting proxy.
//  2. Dial with no load report option; make RPCs until A answers.
//  3. The LRS server receives a report for cluster-a.
//  4. The proxy accepted exactly one connection (ADS and LRS share it).
func TestResolver_E2E_LoadReportOnADSConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	a, b, c := startBackend(t, "A"), startBackend(t, "B"), startBackend(t, "C")
	ls := testutil.NewLRSServer(t, testutil.LRSServerOptions{Clusters: []string{"cluster-a"}})
	ms := testutil.NewManagementServer(t, testutil.ServerOptions{LoadReporting: ls})
	proxy := startCountingProxy(t, ms.Address())
	e := newEnvOn(t, ms, testutil.BootstrapOptions{}, func(m map[string]any) {
		for _, s := range m["xds_servers"].([]any) {
			s.(map[string]any)["server_uri"] = proxy.addr
		}
	})
	ms.Update("", testutil.Canary(testutil.CanaryOptions{PortA: a.port, PortB: b.port, PortC: c.port, LRSOnA: true}))
	tc, _ := e.dial(t, "xds:///svc")
	if err := waitForServer(ctx, tc, "A"); err != nil {
		t.Fatal(err)
	}
	for n := 1; ; n++ {
		reqs, err := ls.WaitForRequests(ctx, n)
		if err != nil {
			t.Fatalf("no LRS report for cluster-a: %v", err)
		}
		if sumLRS(reqs, "cluster-a").reports > 0 {
			break
		}
	}
	if got := proxy.accepted.Load(); got != 1 {
		t.Errorf("the management server accepted %d connections; want 1 (LRS on the ADS connection, R-22.1)", got)
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
	timers := make(chan *resolver.FakeTimer, 64)
	tc, _ := e.dial(t, "xds:///svc", resolver.WithFakeTimers(timers))
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
	var retention *resolver.FakeTimer
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
