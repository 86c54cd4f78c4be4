// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/depmgr"
	"github.com/proxyless/xds/testutil"

	v3discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	gcptypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	gcpcache "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	gcpresource "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gcpserver "github.com/envoyproxy/go-control-plane/pkg/server/v3"
)

// BenchmarkSideBySide_GoControlPlane measures this library and grpc-go
// v1.85's own xDS client on the scale load (one Listener, one
// RouteConfiguration of n routes, n EDS clusters, n ClusterLoadAssignments
// of 3 endpoints; n = 1,000 and 10,000) served by go-control-plane v0.14's
// SotW and delta server from a snapshot cache, in the same process, over
// gRPC on loopback: the comparison of issue 17. Each iteration starts a new
// client and measures
//   - first-ns: from the start to the first complete configuration: for
//     this library depmgr.New to the first snapshot (SotW, then delta),
//     for grpc-go building its xDS resolver to its first state (its
//     dependency manager, gRFC A74, waits for the whole tree);
//   - heap-MiB: the live heap then, above what was live before: the
//     client, its configuration and the server's per-stream state (the
//     same for every client: the server keeps no request log).
//
// grpc-go at n=10,000 takes minutes; run it alone:
//
//	go test -run='^$' -bench='SideBySide_GoControlPlane/n=10000/grpc-go' -benchtime=1x -timeout=60m
func BenchmarkSideBySide_GoControlPlane(b *testing.B) {
	for _, n := range []int{1000, scaleN} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			addr := startBenchGCPServer(b, scaleResources(n))
			js := fmt.Sprintf(`{
				"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}],
				"node": {"id": %q}
			}`, addr, nodeID)
			for _, delta := range []bool{false, true} {
				name := map[bool]string{false: "ours-sotw", true: "ours-delta"}[delta]
				b.Run(name, func(b *testing.B) { benchmarkOursFirstSnapshot(b, js, n, delta) })
			}
			b.Run("grpc-go", func(b *testing.B) { benchmarkGRPCGoFirstState(b, js) })
		})
	}
}

// startBenchGCPServer serves res with go-control-plane's server (SotW and
// delta) on 127.0.0.1, without callbacks, until the benchmark ends, and
// returns its address.
func startBenchGCPServer(b *testing.B, res testutil.Resources) string {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	cache := gcpcache.NewSnapshotCache(false, gcpcache.IDHash{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	snap, err := gcpcache.NewSnapshot("1", map[gcpresource.Type][]gcptypes.Resource{
		gcpresource.ListenerType: toResources(res.Listeners),
		gcpresource.RouteType:    toResources(res.Routes),
		gcpresource.ClusterType:  toResources(res.Clusters),
		gcpresource.EndpointType: toResources(res.Endpoints),
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := cache.SetSnapshot(ctx, nodeID, snap); err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer(grpc.WaitForHandlers(true))
	v3discoverygrpc.RegisterAggregatedDiscoveryServiceServer(srv, gcpserver.NewServer(ctx, cache, nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	b.Cleanup(func() {
		cancel()
		srv.Stop()
		<-done
	})
	return lis.Addr().String()
}

// measureFirst runs first once per iteration and reports first-ns, the
// time first took (it returns at the first complete configuration), and
// heap-MiB, the live heap then above what was live before. first returns
// what to release once measured; ctx bounds it (1 hour).
func measureFirst(b *testing.B, first func(ctx context.Context) (release func())) {
	var elapsed time.Duration
	var live uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithTimeout(b.Context(), time.Hour)
		base := liveHeap()
		b.StartTimer()
		start := time.Now()
		release := first(ctx)
		elapsed += time.Since(start)
		b.StopTimer()
		live += liveHeap() - base
		release()
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "first-ns")
	b.ReportMetric(float64(live)/float64(b.N)/(1<<20), "heap-MiB")
}

func benchmarkOursFirstSnapshot(b *testing.B, bootstrapJSON string, n int, delta bool) {
	cfg, err := bootstrap.Parse([]byte(bootstrapJSON))
	if err != nil {
		b.Fatal(err)
	}
	var opts []client.Option
	if delta {
		opts = append(opts, client.WithDelta())
	}
	measureFirst(b, func(ctx context.Context) func() {
		c, err := client.New(cfg, opts...)
		if err != nil {
			b.Fatal(err)
		}
		w := &snapshotWaiter{updates: make(chan *depmgr.XDSConfig, 1), errs: make(chan error, 1)}
		m := depmgr.New(c, scaleListener, w)
		var snap *depmgr.XDSConfig
		select {
		case snap = <-w.updates:
		case err := <-w.errs:
			b.Fatal(err)
		case <-ctx.Done():
			b.Fatal(ctx.Err())
		}
		if got := snap.NumClusters(); got != n {
			b.Fatalf("the first snapshot has %d clusters, want %d", got, n)
		}
		return func() {
			m.Close()
			c.Close()
		}
	})
}

func benchmarkGRPCGoFirstState(b *testing.B, bootstrapJSON string) {
	builder, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrapJSON))
	if err != nil {
		b.Fatal(err)
	}
	measureFirst(b, func(ctx context.Context) func() {
		r, _, _ := firstGRPCGoState(ctx, b, builder)
		return r.Close
	})
}

// snapshotWaiter is the watcher of a depmgr.Manager: it keeps the newest
// snapshot and the first whole-configuration error.
type snapshotWaiter struct {
	updates chan *depmgr.XDSConfig // cap 1
	errs    chan error             // cap 1
}

func (w *snapshotWaiter) ResourceChanged(cfg *depmgr.XDSConfig, done func()) {
	defer done()
	select {
	case <-w.updates: // drop the older one
	default:
	}
	w.updates <- cfg
}

func (w *snapshotWaiter) ResourceError(err error, done func()) {
	defer done()
	select {
	case w.errs <- err:
	default:
	}
}

func (w *snapshotWaiter) AmbientError(_ error, done func()) { done() }
