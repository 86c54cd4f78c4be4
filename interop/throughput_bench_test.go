// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"
)

// closedLoop makes UnaryCalls on tc as testutil.ClosedLoop does.
func closedLoop(ctx context.Context, tc testgrpc.TestServiceClient, workers int, d time.Duration) (int64, error) {
	return testutil.ClosedLoop(ctx, workers, d, func(ctx context.Context) error {
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		return err
	})
}

// BenchmarkThroughput_SideBySide measures, in one process, the
// closed-loop RPC throughput (32 concurrent callers) of four channels to
// the same three backends: this library's xds:/// channel (the README's
// NewBuilder), the same with DialOptions (interceptors), grpc-go's own
// xDS channel, both on one go-control-plane configuration (a route, a
// ROUND_ROBIN cluster), and a plain round_robin channel. Each iteration
// runs every channel for 250ms, in rotating order; the benchmark reports
// each channel's RPCs per second and its ratio to the plain channel's,
// by wall clock and per CPU second of the process (steadier on a loaded
// machine). Run with -benchtime=Nx for N rotations.
func BenchmarkThroughput_SideBySide(b *testing.B) {
	const workers, round = 32, 250 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ports []uint32
	var addrs []grpcresolver.Address
	for i := range 3 {
		be, err := testutil.StartBackend(testutil.BackendOptions{ID: fmt.Sprint(i)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(be.Stop)
		ports = append(ports, be.Port)
		addrs = append(addrs, grpcresolver.Address{Addr: be.Address})
	}
	addr := startBenchGCPServer(b, testutil.Chain(testutil.ChainOptions{Listener: "svc", Ports: ports}))
	js := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, addr, nodeID)
	cfg, err := bootstrap.Parse([]byte(js))
	if err != nil {
		b.Fatal(err)
	}
	xc, err := client.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(xc.Close)
	theirResolver, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(js))
	if err != nil {
		b.Fatal(err)
	}
	mr := manual.NewBuilderWithScheme("plain")
	mr.InitialState(grpcresolver.State{Addresses: addrs})
	plain := grpc.WithTransportCredentials(insecure.NewCredentials())
	specs := []struct {
		name   string
		target string
		opts   []grpc.DialOption
	}{
		{"plain", "plain:///svc", []grpc.DialOption{grpc.WithResolvers(mr), grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`)}},
		{"ours", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(xdsresolver.NewBuilder(xc))}},
		{"ours-dialoptions", "xds:///svc", xdsresolver.DialOptions(xc)},
		{"grpc-go", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(theirResolver)}},
	}
	tcs := make([]testgrpc.TestServiceClient, len(specs))
	for i, sp := range specs {
		cc, err := grpc.NewClient(sp.target, append(sp.opts, plain)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		tcs[i] = testgrpc.NewTestServiceClient(cc)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = tcs[i].UnaryCall(wctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
		wcancel()
		if err != nil {
			b.Fatalf("%s: %v", sp.name, err)
		}
		if _, err := closedLoop(ctx, tcs[i], workers, round); err != nil { // every connection up
			b.Fatalf("%s: %v", sp.name, err)
		}
	}
	total := make([]int64, len(specs))
	elapsed, cpu := make([]time.Duration, len(specs)), make([]time.Duration, len(specs))
	b.ResetTimer()
	for i := range b.N {
		for k := range specs {
			c := (i + k) % len(specs)
			start, startCPU := time.Now(), testutil.ProcessCPU()
			n, err := closedLoop(ctx, tcs[c], workers, round)
			if err != nil {
				b.Fatalf("%s: %v", specs[c].name, err)
			}
			total[c] += n
			elapsed[c] += time.Since(start)
			cpu[c] += testutil.ProcessCPU() - startCPU
		}
	}
	b.StopTimer()
	rps := func(c int) float64 { return float64(total[c]) / elapsed[c].Seconds() }
	perCPU := func(c int) float64 { return float64(total[c]) / cpu[c].Seconds() }
	for c, sp := range specs {
		b.ReportMetric(rps(c), sp.name+"-rpc/s")
		if c > 0 {
			b.ReportMetric(rps(c)/rps(0), sp.name+"-ratio")
			b.ReportMetric(perCPU(c)/perCPU(0), sp.name+"-cpu-ratio")
		}
	}
}
