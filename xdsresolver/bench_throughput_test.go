// SPDX-License-Identifier: Apache-2.0

package xdsresolver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// BenchmarkThroughput compares, in one process, the closed-loop RPC
// throughput (32 concurrent callers) of an xds:/// channel with that of
// a plain round_robin channel to the same three backends: each iteration
// runs both for 250ms each, in alternating order, and the benchmark
// reports the RPCs per second of each and their ratio (xds ÷ plain; the
// target is ≥ 0.95). "xds" is the default configuration (a route, a
// ROUND_ROBIN cluster); "xds-retries", "xds-od" and "xds-retries-od" add
// a retry policy, outlier detection, or both, configured but idle (no RPC
// fails). Run with -benchtime=Nx for N alternations.
func BenchmarkThroughput(b *testing.B) {
	const workers, round = 32, 250 * time.Millisecond
	for _, variant := range []string{"xds", "xds-retries", "xds-od", "xds-retries-od"} {
		b.Run(variant, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ports []uint32
			var addrs []resolver.Address
			for i := range 3 {
				be, err := testutil.StartBackend(testutil.BackendOptions{ID: fmt.Sprint(i)})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(be.Stop)
				ports = append(ports, be.Port)
				addrs = append(addrs, resolver.Address{Addr: be.Address})
			}
			ms := testutil.NewManagementServer(b, testutil.ServerOptions{})
			r := testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: ports})
			if variant == "xds-retries" || variant == "xds-retries-od" {
				rt := testutil.ClusterRoute("", "cluster-svc")
				rt.GetRoute().RetryPolicy = &v3routepb.RetryPolicy{RetryOn: "unavailable"}
				r.Routes = []*v3routepb.RouteConfiguration{testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("vh", []string{"svc"}, rt))}
			}
			if variant == "xds-od" || variant == "xds-retries-od" {
				// Success rate ejection (the default), which needs 5
				// endpoints: it counts every RPC, and ejects none.
				c := testutil.Cluster("cluster-svc", "eds-svc")
				c.OutlierDetection = &v3clusterpb.OutlierDetection{}
				r.Clusters = []*v3clusterpb.Cluster{c}
			}
			ms.Update("", r)
			cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
			if err != nil {
				b.Fatal(err)
			}
			xc, err := client.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(xc.Close)
			xdsCC, err := grpc.NewClient("xds:///svc", grpc.WithResolvers(xdsresolver.NewBuilder(xc)), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { xdsCC.Close() })
			mr := manual.NewBuilderWithScheme("plain")
			mr.InitialState(resolver.State{Addresses: addrs})
			plainCC, err := grpc.NewClient("plain:///svc", grpc.WithResolvers(mr), grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { plainCC.Close() })
			channels := []testgrpc.TestServiceClient{testgrpc.NewTestServiceClient(xdsCC), testgrpc.NewTestServiceClient(plainCC)}
			for _, tc := range channels { // warm up: every connection up
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := tc.UnaryCall(wctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
				wcancel()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := closedLoop(ctx, tc, workers, round); err != nil {
					b.Fatal(err)
				}
			}
			var total [2]int64
			var elapsed, cpu [2]time.Duration
			b.ResetTimer()
			for i := range b.N {
				for k := range 2 {
					c := (i + k) % 2 // alternate which goes first
					start, startCPU := time.Now(), testutil.ProcessCPU()
					n, err := closedLoop(ctx, channels[c], workers, round)
					if err != nil {
						b.Fatal(err)
					}
					total[c] += n
					elapsed[c] += time.Since(start)
					cpu[c] += testutil.ProcessCPU() - startCPU
				}
			}
			b.StopTimer()
			xds, plain := float64(total[0])/elapsed[0].Seconds(), float64(total[1])/elapsed[1].Seconds()
			b.ReportMetric(xds, "xds-rpc/s")
			b.ReportMetric(plain, "plain-rpc/s")
			b.ReportMetric(xds/plain, "ratio")
			// The same per second of the process's CPU time (client and
			// backends): steadier than wall-clock throughput on a machine
			// that other processes load.
			xdsCPU, plainCPU := float64(total[0])/cpu[0].Seconds(), float64(total[1])/cpu[1].Seconds()
			b.ReportMetric(xdsCPU/plainCPU, "cpu-ratio")
		})
	}
}

// closedLoop makes UnaryCalls on tc as testutil.ClosedLoop does.
func closedLoop(ctx context.Context, tc testgrpc.TestServiceClient, workers int, d time.Duration) (int64, error) {
	return testutil.ClosedLoop(ctx, workers, d, func(ctx context.Context) error {
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		return err
	})
}
