// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/xds"

	"github.com/proxyless/xds/testutil"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// The scale load of the dependency manager issue: one Listener, one
// RouteConfiguration with scaleN routes, scaleN EDS clusters and scaleN
// ClusterLoadAssignments with 3 endpoints each.
const scaleN = 10_000

// scaleListener is the Listener (and data-plane authority) of the load.
const scaleListener = "svc"

// scaleClusterName is the name of cluster i of the load.
func scaleClusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }

// scaleEDSName is the EDS service name of cluster i of the load.
func scaleEDSName(i int) string { return fmt.Sprintf("eds-%05d", i) }

// scaleResources builds the load: route i matches the path prefix
// "/svc-i/" and goes to cluster i; a last, catch-all route goes to cluster
// 0. Endpoints are 10.x.y.z on ports 8080-8082.
func scaleResources(n int) testutil.Resources {
	vh := &v3routepb.VirtualHost{Name: scaleListener + "-vh", Domains: []string{scaleListener}}
	res := testutil.Resources{
		Listeners: testutil.Chain(testutil.ChainOptions{Listener: scaleListener}).Listeners,
	}
	for i := range n {
		vh.Routes = append(vh.Routes, &v3routepb.Route{
			Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: fmt.Sprintf("/svc-%05d/", i)}},
			Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
				ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: scaleClusterName(i)},
			}},
		})
		res.Clusters = append(res.Clusters, testutil.Cluster(scaleClusterName(i), scaleEDSName(i)))
		res.Endpoints = append(res.Endpoints, testutil.Endpoints(scaleEDSName(i), scaleHost(i), 8080, 8081, 8082))
	}
	vh.Routes = append(vh.Routes, &v3routepb.Route{
		Match: &v3routepb.RouteMatch{PathSpecifier: &v3routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &v3routepb.Route_Route{Route: &v3routepb.RouteAction{
			ClusterSpecifier: &v3routepb.RouteAction_Cluster{Cluster: scaleClusterName(0)},
		}},
	})
	res.Routes = []*v3routepb.RouteConfiguration{{Name: "route-" + scaleListener, VirtualHosts: []*v3routepb.VirtualHost{vh}}}
	return res
}

// scaleHost is a distinct IPv4 address for cluster i.
func scaleHost(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff) }

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// stateRecorder is a resolver.ClientConn that records the states and
// errors grpc-go's xDS resolver produces. Its resolver publishes a state
// only once its dependency manager (gRFC A74) has the whole tree: the
// Listener, the RouteConfiguration and every cluster with its endpoints.
type stateRecorder struct {
	resolver.ClientConn // nil: panics on methods the resolver should not call

	mu     sync.Mutex
	states int
	errs   []error
	notify chan struct{} // cap 1; signalled on every state or error
}

func newStateRecorder() *stateRecorder {
	return &stateRecorder{notify: make(chan struct{}, 1)}
}

func (r *stateRecorder) UpdateState(resolver.State) error {
	r.mu.Lock()
	r.states++
	r.mu.Unlock()
	r.signal()
	return nil
}

func (r *stateRecorder) ReportError(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	r.signal()
}

func (r *stateRecorder) ParseServiceConfig(string) *serviceconfig.ParseResult {
	return &serviceconfig.ParseResult{}
}

func (r *stateRecorder) signal() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// waitForStates waits until n states were published; an error fails.
func (r *stateRecorder) waitForStates(ctx context.Context, n int) error {
	for {
		r.mu.Lock()
		states, errs := r.states, r.errs
		r.mu.Unlock()
		if len(errs) > 0 {
			return fmt.Errorf("resolver reported %v", errs)
		}
		if states >= n {
			return nil
		}
		select {
		case <-r.notify:
		case <-ctx.Done():
			return fmt.Errorf("waiting for resolver state %d: %w", n, ctx.Err())
		}
	}
}

// BenchmarkGRPCGo_XDSResolver measures grpc-go v1.85's own xDS client and
// dependency manager, through its public xDS resolver, on the scale load
// (1,000 and 10,000 clusters) served by the testutil management server in a
// child process (testutil.StartServerProcess, TestHelperScaleServer) over
// loopback: from building the resolver to its first complete state
// ("first-ns"), the live heap then ("live-MB", above what was live before:
// the client's alone, none of the server's), and from one
// ClusterLoadAssignment change (ServerProcess.Merge) to the next state
// ("update-ns"). It is the reference the library's depmgr benchmark
// (BenchmarkMesh10000, whose heap-MiB is measured the same way) compares
// with.
//
// grpc-go sends one CDS (and EDS) request per new subscription, each with
// the whole name list so far, and a SotW server answers
// each with every requested resource, so its start-up is quadratic in the
// number of clusters: about 7 s for 1,000 on a 2-core machine, and many
// minutes for 10,000. Run the large case on its own:
//
//	go test -run='^$' -bench='GRPCGo_XDSResolver/n=10000' -benchtime=1x -timeout=60m
func BenchmarkGRPCGo_XDSResolver(b *testing.B) {
	for _, n := range []int{1000, scaleN} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkGRPCGoResolver(b, n) })
	}
}

// TestHelperScaleServer is the management server of
// BenchmarkGRPCGo_XDSResolver, in the child process of
// testutil.StartServerProcess; it is skipped in normal test runs.
func TestHelperScaleServer(t *testing.T) {
	testutil.ServeProcess(t, testutil.ProcessOptions{})
}

func benchmarkGRPCGoResolver(b *testing.B, n int) {
	// The server is in a child process: live-MB counts the client alone
	// (as the library's BenchmarkMesh10000 does).
	srv := testutil.StartServerProcess(b, "TestHelperScaleServer")
	if err := srv.Update("", scaleResources(n)); err != nil {
		b.Fatal(err)
	}
	builder, err := xds.NewXDSResolverWithConfigForTesting(srv.Bootstrap(testutil.BootstrapOptions{NodeID: "grpc-go"}))
	if err != nil {
		b.Fatal(err)
	}

	var first, update time.Duration
	var live uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithTimeout(b.Context(), 50*time.Minute)
		base := liveHeap()
		r, rec, d := firstGRPCGoState(ctx, b, builder)
		first += d
		b.StopTimer()
		live += liveHeap() - base

		// One ClusterLoadAssignment changes (a new port for cluster 7).
		changed := testutil.Resources{Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			testutil.Endpoints(scaleEDSName(7), scaleHost(7), 9090+uint32(i%1000)),
		}}
		start := time.Now()
		if err := srv.Merge("", changed); err != nil {
			b.Fatal(err)
		}
		if err := rec.waitForStates(ctx, 2); err != nil {
			b.Fatal(err)
		}
		update += time.Since(start)
		r.Close()
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-ns")
	b.ReportMetric(float64(update.Nanoseconds())/float64(b.N), "update-ns")
	b.ReportMetric(float64(live)/float64(b.N)/(1<<20), "live-MB")
}

// firstGRPCGoState builds grpc-go's xDS resolver for the scale Listener
// with builder and waits for its first state (its dependency manager, gRFC
// A74, publishes one once it has the whole tree). It returns the resolver,
// its recorder and the time from Build to that state.
func firstGRPCGoState(ctx context.Context, b *testing.B, builder resolver.Builder) (resolver.Resolver, *stateRecorder, time.Duration) {
	b.Helper()
	target := resolver.Target{URL: url.URL{Scheme: "xds", Path: "/" + scaleListener}}
	rec := newStateRecorder()
	start := time.Now()
	r, err := builder.Build(target, rec, resolver.BuildOptions{Authority: scaleListener})
	if err != nil {
		b.Fatal(err)
	}
	if err := rec.waitForStates(ctx, 1); err != nil {
		b.Fatal(err)
	}
	return r, rec, time.Since(start)
}
