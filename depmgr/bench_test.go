// SPDX-License-Identifier: Apache-2.0

package depmgr_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"

	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// The scale load of the dependency manager issue, the same as the
// interop module's BenchmarkGRPCGo_XDSResolver (which measures grpc-go
// v1.85's xDS client on it): one Listener "svc", one RouteConfiguration
// with n routes (route i matches "/svc-i/" and goes to cluster i, then a
// catch-all route to cluster 0), n EDS clusters and n
// ClusterLoadAssignments with 3 endpoints each; n is scaleN = 10,000 in
// the issue.
const scaleN = 10_000

func scaleClusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }
func scaleEDSName(i int) string     { return fmt.Sprintf("eds-%05d", i) }
func scaleHost(i int) string        { return fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff) }

func scaleResources(n int) testutil.Resources {
	res := testutil.Resources{Listeners: listeners(testutil.Listener("svc", "route-svc"))}
	vh := testutil.VirtualHost("svc-vh", []string{"svc"})
	for i := range n {
		vh.Routes = append(vh.Routes, testutil.ClusterRoute(fmt.Sprintf("/svc-%05d/", i), scaleClusterName(i)))
		res.Clusters = append(res.Clusters, testutil.Cluster(scaleClusterName(i), scaleEDSName(i)))
		res.Endpoints = append(res.Endpoints, testutil.Endpoints(scaleEDSName(i), scaleHost(i), 8080, 8081, 8082))
	}
	vh.Routes = append(vh.Routes, testutil.ClusterRoute("/", scaleClusterName(0)))
	res.Routes = routes(testutil.RouteConfigWithVirtualHosts("route-svc", vh))
	return res
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// latest is a Watcher that keeps only a signal per Update.
type latest struct {
	updates chan *depmgr.XDSConfig // cap 1
}

func (l *latest) Update(cfg *depmgr.XDSConfig) {
	select {
	case <-l.updates: // drop the older one
	default:
	}
	l.updates <- cfg
}
func (l *latest) Error(err error)        { panic(fmt.Sprintf("whole-config error: %v", err)) }
func (l *latest) AmbientError(err error) {}

// wait returns the next Update for which ok holds.
func (l *latest) wait(ctx context.Context, ok func(*depmgr.XDSConfig) bool) (*depmgr.XDSConfig, error) {
	for {
		select {
		case cfg := <-l.updates:
			if ok(cfg) {
				return cfg, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// BenchmarkDepMgr_Scale measures the scale load (1,000 and 10,000
// clusters) served by the testutil management server over gRPC on
// loopback, with a new client and Manager per iteration, as the interop
// module's BenchmarkGRPCGo_XDSResolver does for grpc-go:
//   - first-ns: from New to the first complete snapshot (the ns/op,
//     B/op and allocs/op of the benchmark cover this part only);
//   - live-MB: the live heap then, above what was live before (the
//     server's resources), client cache included;
//   - update-ns: from the server's Update of a snapshot in which one
//     ClusterLoadAssignment changed to the snapshot that has it (the
//     server resends every type, and the client compares all 2n+2
//     resources to find the change).
//
// BenchmarkDepMgr_10k_CLAChange and BenchmarkDepMgr_10k_EndpointsCallback
// measure an update without the server's full resend.
func BenchmarkDepMgr_Scale(b *testing.B) {
	for _, n := range []int{1000, scaleN} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchmarkScale(b, n) })
	}
}

func benchmarkScale(b *testing.B, n int) {
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	res := scaleResources(n)
	ms.Update("", res)

	var first, update time.Duration
	var live uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
		base := liveHeap()
		c := newClient(b, ms)
		w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
		start := time.Now()
		m := depmgr.New(c, "svc", w)
		cfg, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true })
		if err != nil {
			b.Fatal(err)
		}
		first += time.Since(start)
		b.StopTimer()
		if cfg.NumClusters() != n {
			b.Fatalf("snapshot has %d clusters, want %d", cfg.NumClusters(), n)
		}
		live += liveHeap() - base

		// One ClusterLoadAssignment changes: a new port for cluster 7.
		port := 9090 + uint32(i%1000)
		changed := res
		changed.Endpoints = append([]*v3endpointpb.ClusterLoadAssignment(nil), res.Endpoints...)
		changed.Endpoints[7] = testutil.Endpoints(scaleEDSName(7), scaleHost(7), port)
		start = time.Now()
		ms.Update("", changed)
		if _, err := w.wait(ctx, hasPort(7, port)); err != nil {
			b.Fatal(err)
		}
		update += time.Since(start)

		m.Close()
		c.Close()
		ms.Update("", res) // back to the base load for the next iteration
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-ns")
	b.ReportMetric(float64(update.Nanoseconds())/float64(b.N), "update-ns")
	b.ReportMetric(float64(live)/float64(b.N)/(1<<20), "live-MB")
}

// hasPort returns a condition on snapshots: cluster i's only endpoint is on
// port.
func hasPort(i int, port uint32) func(*depmgr.XDSConfig) bool {
	want := fmt.Sprintf("%s:%d", scaleHost(i), port)
	return func(cfg *depmgr.XDSConfig) bool {
		a := addresses(cfg.Cluster(scaleClusterName(i)).Config.Endpoints)
		return len(a) == 1 && a[0] == want
	}
}

// BenchmarkDepMgr_10k_CLAChange measures one update on the scale load:
// from sending a response that carries one changed ClusterLoadAssignment
// (of a cluster picked in turn) to the snapshot that has it, with
// allocations. The Manager and its client are set up once.
func BenchmarkDepMgr_10k_CLAChange(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	ms.Update("", scaleResources(scaleN))
	c := newClient(b, ms)
	w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
	m := depmgr.New(c, "svc", w)
	defer m.Close()
	if _, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cluster, port := i*7919%scaleN, 9000+uint32(i%2)
		resp := &v3discoverypb.DiscoveryResponse{
			VersionInfo: fmt.Sprint("scripted-", i),
			TypeUrl:     resources.EndpointsTypeURL,
			Resources:   []*anypb.Any{testutil.MarshalAny(testutil.Endpoints(scaleEDSName(cluster), scaleHost(cluster), port))},
		}
		if _, err := ms.SendResponse(ctx, resp); err != nil {
			b.Fatal(err)
		}
		if _, err := w.wait(ctx, hasPort(cluster, port)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDepMgr_10k_EndpointsCallback measures the Manager's share of
// one update on the scale load: from the client's ResourceChanged call
// with new endpoints of one cluster to the Watcher's Update with them
// (the rebuild, the copy of the cluster map, the hop to the Watcher's
// goroutine), without the network and the client.
func BenchmarkDepMgr_10k_EndpointsCallback(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
	ms.Update("", scaleResources(scaleN))
	c := newClient(b, ms)
	w := &latest{updates: make(chan *depmgr.XDSConfig, 1)}
	m := depmgr.New(c, "svc", w)
	defer m.Close()
	if _, err := w.wait(ctx, func(*depmgr.XDSConfig) bool { return true }); err != nil {
		b.Fatal(err)
	}
	// Two values of cluster 7's endpoints, handed over in turn: each is a
	// change.
	var values [2]*resources.Endpoints
	for i := range values {
		_, v, err := resources.EndpointsType.DecodeTyped(testutil.MarshalAny(testutil.Endpoints(scaleEDSName(7), scaleHost(7), 9000+uint32(i))))
		if err != nil {
			b.Fatal(err)
		}
		values[i] = v
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := values[i%2]
		if !m.DeliverEndpoints(scaleEDSName(7), v) {
			b.Fatal("no watch of ", scaleEDSName(7))
		}
		if _, err := w.wait(ctx, func(cfg *depmgr.XDSConfig) bool {
			return cfg.Cluster(scaleClusterName(7)).Config.Endpoints == v
		}); err != nil {
			b.Fatal(err)
		}
	}
}
