// SPDX-License-Identifier: Apache-2.0

// Command metrics shows the data path's metrics in the Prometheus text
// format: it sends RPCs through xds:///svc to the backends of the xdsctl
// demo and serves the channel's metrics (gRFC A66, with the xDS labels
// grpc.lb.locality and grpc.lb.backend_service of gRFC A78 and A89) and
// its xDS client's (gRFC A78) on /metrics. In two terminals:
//
//	go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json                  # terminal 1, at the repository's root
//	cd examples/metrics && GRPC_XDS_BOOTSTRAP=/tmp/b.json go run . --metrics localhost:9464   # terminal 2
//	curl -s localhost:9464/metrics | grep grpc_client_attempt_duration_seconds_count
//
// With --mesh it needs no demo: it runs a mesh of its own in the process
// (a management server, and three xDS-enabled gRPC backends in two
// localities whose server metrics, gRFC A66's grpc.server.*, recorded
// through otelxds.ServerOption, are served on the same /metrics), and
// sends UnaryCall RPCs split 80/20 between its two clusters:
//
//	cd examples/metrics && go run . --mesh --metrics localhost:9464
//	curl -s localhost:9464/metrics | grep -E 'grpc_(client_attempt|server_call)_duration_seconds_count'
//
// It is a module of its own, so that the library's module does not depend
// on Prometheus: the metrics go through package otelxds to OpenTelemetry's
// Prometheus exporter (go.opentelemetry.io/otel/exporters/prometheus).
//
// It makes RPCs alternately on the two routes of the demo, SayHello (split
// 90/10 between cluster-svc and cluster-svc-canary) and UnaryCall (all to
// cluster-svc), one every --interval (default 100ms), --rpcs of them (0,
// the default, until interrupted), and keeps serving /metrics until it is
// interrupted. It exits 1 when the bootstrap is missing or unusable or it
// cannot listen on --metrics, 2 on a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/xdsresolver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:], nil)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, new(usageError)):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
}

type usageError struct{ error }

// run parses args, serves /metrics and makes the RPCs until ctx ends (or
// --rpcs are made and ctx ends). ready, when not nil, is given the
// address /metrics is served on once it is.
func run(ctx context.Context, out, errOut io.Writer, args []string, ready func(addr string)) error {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(errOut)
	addr := fs.String("metrics", "localhost:9464", "serve /metrics (Prometheus text format) on this `address`")
	rpcs := fs.Int("rpcs", 0, "make this many RPCs, then only serve /metrics; 0: until interrupted")
	interval := fs.Duration("interval", 100*time.Millisecond, "time between RPCs")
	inProcess := fs.Bool("mesh", false, "run a mesh of its own in the process (a management server and three xDS-enabled backends in two localities, whose server metrics are served too) instead of the demo's of the bootstrap")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	// OpenTelemetry with the Prometheus exporter, on a registry of its own.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	rec, err := otelxds.New(mp)
	if err != nil {
		return err
	}
	defer rec.Close()

	var cfg *bootstrap.Config
	if *inProcess {
		m, raw, err := startMesh(ctx, mp)
		if err != nil {
			return fmt.Errorf("starting the mesh: %w", err)
		}
		defer m.stop()
		if cfg, err = bootstrap.Parse(raw); err != nil {
			return err
		}
		fmt.Fprintf(out, "a mesh in the process: management server %s, backends %s (cluster-east, us-east1), %s (cluster-west, us-west1); RPCs split 80/20\n",
			m.ms.Address(), m.backends[0].Address+", "+m.backends[1].Address, m.backends[2].Address)
	} else if cfg, err = bootstrap.FromEnv(); err != nil {
		return fmt.Errorf("%w (start the demo with: go run ./cmd/xdsctl demo --bootstrap-out /tmp/b.json, then set GRPC_XDS_BOOTSTRAP=/tmp/b.json; or use --mesh)", err)
	}

	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Close()
		<-served
	}()
	fmt.Fprintf(out, "serving the metrics on http://%s/metrics\n", lis.Addr())
	if ready != nil {
		ready(lis.Addr().String())
	}

	c, err := client.New(cfg, client.WithMetrics(rec), client.WithTarget("xds:///svc"))
	if err != nil {
		return err
	}
	defer c.Close()
	cc, err := grpc.NewClient("xds:///svc", append(xdsresolver.DialOptions(c),
		otelxds.DialOption(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{
			MeterProvider:  mp,
			OptionalLabels: []string{"grpc.lb.locality", "grpc.lb.backend_service"},
		}}))...)
	if err != nil {
		return err
	}
	defer cc.Close()

	tc := testgrpc.NewTestServiceClient(cc)
	for i := 0; *rpcs == 0 || i < *rpcs; i++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if i%2 == 0 && !*inProcess { // the mesh's backends have no Greeter
			// helloworld.Greeter/SayHello, whose request and reply are one
			// string field each (wrapperspb.StringValue's wire form);
			// StaticMethod names the method in the metrics, as generated
			// clients do.
			err = cc.Invoke(rctx, "/helloworld.Greeter/SayHello", wrapperspb.String("xDS"), new(wrapperspb.StringValue), grpc.StaticMethod(), grpc.WaitForReady(true))
		} else {
			_, err = tc.UnaryCall(rctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true))
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintf(out, "RPC %d: %v\n", i+1, err)
		}
		timer := time.NewTimer(*interval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
	fmt.Fprintf(out, "%d RPCs made; serving the metrics until interrupted\n", *rpcs)
	<-ctx.Done()
	return nil
}
