// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	grpcxds "google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// metricSeries is one data point as the side-by-side comparison sees it:
// the instrument and the labels, the count (of RPCs for a histogram, the
// value for a counter) and, for message sizes, the sum.
type metricSeries struct {
	Unit, Kind string
	Attrs      string
	Count      uint64
	Sum        int64
}

// collectSeries returns what reader collected, by metric name.
func collectSeries(t *testing.T, reader *sdkmetric.ManualReader) map[string][]metricSeries {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	attrs := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			parts = append(parts, string(kv.Key)+"="+kv.Value.AsString())
		}
		return strings.Join(parts, " ")
	}
	out := map[string][]metricSeries{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out[m.Name] = append(out[m.Name], metricSeries{m.Unit, "counter", attrs(dp.Attributes), uint64(dp.Value), 0})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out[m.Name] = append(out[m.Name], metricSeries{m.Unit, "histogram", attrs(dp.Attributes), dp.Count, 0})
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					out[m.Name] = append(out[m.Name], metricSeries{m.Unit, "histogram", attrs(dp.Attributes), dp.Count, dp.Sum})
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b metricSeries) int { return strings.Compare(a.Attrs, b.Attrs) })
	}
	return out
}

// localityEndpoints returns a ClusterLoadAssignment for cluster with one
// locality per entry of ports, each with one endpoint on 127.0.0.1.
func localityEndpoints(cluster string, localities []*v3corepb.Locality, ports ...uint32) *v3endpointpb.ClusterLoadAssignment {
	cla := &v3endpointpb.ClusterLoadAssignment{ClusterName: cluster}
	for i, port := range ports {
		cla.Endpoints = append(cla.Endpoints, &v3endpointpb.LocalityLbEndpoints{
			Locality:            localities[i],
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         testutil.Endpoints(cluster, "127.0.0.1", port).Endpoints[0].LbEndpoints,
		})
	}
	return cla
}

// TestMetrics_SideBySide_GRPCGo runs one configuration, two clusters in
// two localities (UnaryCall to cluster-a in r1/z1/s1, every other RPC to
// cluster-b in r2/z2), through grpc-go's xDS channel with grpc-go's
// OpenTelemetry plugin and through this library's channel with
// otelxds.DialOption, the same Options (the optional labels
// grpc.lb.locality and grpc.lb.backend_service asked for) and the same
// RPCs, and checks that both record the same metrics: names, units, kinds,
// label sets (with the xDS labels' values), and per-cluster and
// per-locality counts and message sizes.
func TestMetrics_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := startIDServer(t, "A"), startIDServer(t, "B")
	s := startGCPServer(t)
	l1 := &v3corepb.Locality{Region: "r1", Zone: "z1", SubZone: "s1"}
	l2 := &v3corepb.Locality{Region: "r2", Zone: "z2"}
	rc := testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("svc", []string{"svc"},
		testutil.ClusterRoute("/grpc.testing.TestService/UnaryCall", "cluster-a"),
		testutil.ClusterRoute("", "cluster-b"),
	))
	s.setSnapshot(ctx, t, "1", testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{rc},
		Clusters:  []*v3clusterpb.Cluster{testutil.Cluster("cluster-a", "eds-a"), testutil.Cluster("cluster-b", "eds-b")},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			localityEndpoints("eds-a", []*v3corepb.Locality{l1}, a.port),
			localityEndpoints("eds-b", []*v3corepb.Locality{l2}, b.port),
		},
	})

	run := func(name string, dial func(*sdkmetric.MeterProvider) []grpc.DialOption) map[string][]metricSeries {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		cc, err := grpc.NewClient("xds:///svc", append(dial(mp), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		tc := testgrpc.NewTestServiceClient(cc)
		for i := range 30 {
			if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, i)}}, grpc.WaitForReady(true)); err != nil {
				t.Fatalf("%s: UnaryCall: %v", name, err)
			}
		}
		for range 20 {
			if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}, grpc.WaitForReady(true)); err != nil {
				t.Fatalf("%s: EmptyCall: %v", name, err)
			}
		}
		return collectSeries(t, reader)
	}
	options := func(mp *sdkmetric.MeterProvider) opentelemetry.Options {
		return opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{
			MeterProvider:  mp,
			OptionalLabels: []string{"grpc.lb.locality", "grpc.lb.backend_service"},
		}}
	}
	theirs := run("grpc-go", func(mp *sdkmetric.MeterProvider) []grpc.DialOption {
		r, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(fmt.Sprintf(`{
			"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
			"node": {"id": %q}
		}`, s.Addr, nodeID)))
		if err != nil {
			t.Fatal(err)
		}
		return []grpc.DialOption{grpc.WithResolvers(r), opentelemetry.DialOption(options(mp))}
	})
	ours := run("proxyless/xds", func(mp *sdkmetric.MeterProvider) []grpc.DialOption {
		return append(xdsresolver.DialOptions(s.newClient(t)), otelxds.DialOption(options(mp)))
	})
	// The locality and cluster of each RPC are labelled on the attempt
	// metrics, by both.
	wantA := `grpc.lb.backend_service=cluster-a grpc.lb.locality={region="r1", zone="z1", sub_zone="s1"} grpc.method=grpc.testing.TestService/UnaryCall`
	if !slices.ContainsFunc(theirs["grpc.client.attempt.duration"], func(s metricSeries) bool { return strings.HasPrefix(s.Attrs, wantA) }) {
		t.Errorf("grpc-go: attempt.duration %+v, want a series %s", theirs["grpc.client.attempt.duration"], wantA)
	}
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("metrics (-grpc-go's xDS channel and plugin +proxyless/xds with otelxds):\n%s", diff)
	}
}
