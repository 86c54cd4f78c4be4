// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	grpcresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/stats/opentelemetry"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/otelxds"
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
	benchThroughput(b, func(xc *client.Client, theirResolver grpcresolver.Builder) []throughputSpec {
		return []throughputSpec{
			{"ours", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(xdsresolver.NewBuilder(xc))}},
			{"ours-dialoptions", "xds:///svc", xdsresolver.DialOptions(xc)},
			{"grpc-go", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(theirResolver)}},
		}
	})
}

// BenchmarkThroughput_Metrics measures what per-call metrics cost: the
// closed-loop throughput of this library's channel (DialOptions) and of
// grpc-go's xDS channel, each without metrics and with OpenTelemetry
// metrics (otelxds.DialOption, and grpc-go's plugin for grpc-go's
// channel; the default metrics, the optional xDS labels asked for, an SDK
// MeterProvider with a manual reader), beside a plain round_robin
// channel. Besides each channel's RPCs per second and ratio to the plain
// channel, it reports the CPU time of the process per RPC (µs/rpc-cpu):
// the difference between a channel with and without metrics is the cost
// per call.
func BenchmarkThroughput_Metrics(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { mp.Shutdown(context.Background()) })
	o := opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{
		MeterProvider:  mp,
		OptionalLabels: []string{"grpc.lb.locality", "grpc.lb.backend_service"},
	}}
	benchThroughput(b, func(xc *client.Client, theirResolver grpcresolver.Builder) []throughputSpec {
		return []throughputSpec{
			{"ours", "xds:///svc", xdsresolver.DialOptions(xc)},
			{"ours-otel", "xds:///svc", append(xdsresolver.DialOptions(xc), otelxds.DialOption(o))},
			{"grpc-go", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(theirResolver)}},
			{"grpc-go-otel", "xds:///svc", []grpc.DialOption{grpc.WithResolvers(theirResolver), opentelemetry.DialOption(o)}},
		}
	})
}

// throughputSpec is a channel under test.
type throughputSpec struct {
	name   string
	target string
	opts   []grpc.DialOption
}

// benchThroughput runs the channels specs returns, after a plain
// round_robin one (spec 0), on one go-control-plane configuration (a
// route, a ROUND_ROBIN cluster of three backends in the process): each
// iteration runs every channel for 250 ms with 32 concurrent callers, in
// rotating order; it reports each channel's RPCs per second, its ratio to
// the plain channel's by wall clock and per CPU second of the process,
// and the process's CPU time per RPC.
func benchThroughput(b *testing.B, channels func(xc *client.Client, theirResolver grpcresolver.Builder) []throughputSpec) {
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
	specs := append([]throughputSpec{
		{"plain", "plain:///svc", []grpc.DialOption{grpc.WithResolvers(mr), grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`)}},
	}, channels(xc, theirResolver)...)
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
		b.ReportMetric(1e6/perCPU(c), sp.name+"-µs/rpc-cpu")
		if c > 0 {
			b.ReportMetric(rps(c)/rps(0), sp.name+"-ratio")
			b.ReportMetric(perCPU(c)/perCPU(0), sp.name+"-cpu-ratio")
		}
	}
}
