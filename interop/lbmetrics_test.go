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
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	grpcxds "google.golang.org/grpc/xds"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3wrrpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	v3wrrlocalitypb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
)

// lbMetrics are the load-balancing metrics of gRFC A78 (weighted round
// robin) and A91 (outlier detection), off by default.
var lbMetrics = []string{
	"grpc.lb.wrr.rr_fallback",
	"grpc.lb.wrr.endpoint_weight_not_yet_usable",
	"grpc.lb.wrr.endpoint_weight_stale",
	"grpc.lb.wrr.endpoint_weights",
	"grpc.lb.outlier_detection.ejections_enforced",
	"grpc.lb.outlier_detection.ejections_unenforced",
}

// TestLBMetrics_SideBySide_GRPCGo checks the load-balancing metrics of
// gRFC A78 and A91 against grpc-go's xDS channel with its OpenTelemetry
// plugin: one configuration with a weighted round robin cluster under
// wrr_locality (two localities) for EmptyCall and an outlier-detected
// cluster for UnaryCall, whose endpoints B and C fail every RPC while
// max_ejection_percent (30) allows one ejection only; the same RPCs for
// 3 s on each channel. Both must record the same metrics with the same
// units and label sets (target, locality in gRFC A76's form, the cluster,
// detection method, unenforced reason); counts depend on timers and are
// only required to be positive.
func TestLBMetrics_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	wa := startORCAServer(t, &orcaServer{cpu: 0.25, foo: 1})
	wb := startORCAServer(t, &orcaServer{cpu: 0.5, foo: 2})
	a, b, c := startFlakyServer(t, "A", false, false), startFlakyServer(t, "B", false, true), startFlakyServer(t, "C", false, true)

	wrr := testutil.Cluster("cluster-wrr", "eds-wrr")
	wrr.LbPolicy = v3clusterpb.Cluster_ROUND_ROBIN
	wrr.LoadBalancingPolicy = &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{{
		TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "wrr_locality", TypedConfig: testutil.MarshalAny(&v3wrrlocalitypb.WrrLocality{
			EndpointPickingPolicy: &v3clusterpb.LoadBalancingPolicy{Policies: []*v3clusterpb.LoadBalancingPolicy_Policy{{
				TypedExtensionConfig: &v3corepb.TypedExtensionConfig{Name: "wrr", TypedConfig: testutil.MarshalAny(&v3wrrpb.ClientSideWeightedRoundRobin{
					WeightUpdatePeriod: durationpb.New(100 * time.Millisecond),
				})},
			}}},
		})},
	}}}
	od := testutil.Cluster("cluster-od", "eds-od")
	od.OutlierDetection = &v3clusterpb.OutlierDetection{
		Interval:                       durationpb.New(500 * time.Millisecond),
		BaseEjectionTime:               durationpb.New(30 * time.Second),
		MaxEjectionPercent:             wrapperspb.UInt32(30),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(3),
		FailurePercentageRequestVolume: wrapperspb.UInt32(5),
	}
	rc := testutil.RouteConfigWithVirtualHosts("route-svc", testutil.VirtualHost("svc", []string{"svc"},
		testutil.ClusterRoute("/grpc.testing.TestService/EmptyCall", "cluster-wrr"),
		testutil.ClusterRoute("", "cluster-od"),
	))
	res := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{rc},
		Clusters:  []*v3clusterpb.Cluster{wrr, od},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{
			localityEndpoints("eds-wrr", []*v3corepb.Locality{{Region: "r1", Zone: "z1"}, {Region: "r2", Zone: "z2", SubZone: "s2"}}, wa, wb),
			testutil.Endpoints("eds-od", "127.0.0.1", a.port, b.port, c.port),
		},
	}
	s := startGCPServer(t)
	s.setSnapshot(ctx, t, "1", res)

	run := func(name string, dial func(opentelemetry.Options) []grpc.DialOption) map[string][]metricSeries {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		o := opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{
			MeterProvider:  mp,
			Metrics:        opentelemetry.DefaultMetrics().Add(lbMetrics...),
			OptionalLabels: []string{"grpc.lb.locality", "grpc.lb.backend_service"},
		}}
		cc, err := grpc.NewClient("xds:///svc", append(dial(o), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		tc := testgrpc.NewTestServiceClient(cc)
		if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}, grpc.WaitForReady(true)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			_, _ = tc.EmptyCall(ctx, &testgrpc.Empty{})
			_, _ = tc.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		}
		got := collectSeries(t, reader)
		for k := range got {
			if !slices.Contains(lbMetrics, k) {
				delete(got, k)
			}
		}
		return got
	}
	theirs := run("grpc-go", func(o opentelemetry.Options) []grpc.DialOption {
		r, err := grpcxds.NewXDSResolverWithConfigForTesting([]byte(fmt.Sprintf(`{
			"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
			"node": {"id": %q}
		}`, s.Addr, nodeID)))
		if err != nil {
			t.Fatal(err)
		}
		return []grpc.DialOption{grpc.WithResolvers(r), opentelemetry.DialOption(o)}
	})
	ours := run("proxyless/xds", func(o opentelemetry.Options) []grpc.DialOption {
		return append(xdsresolver.DialOptions(s.newClient(t)), otelxds.DialOption(o))
	})
	// What must match: for each metric, its unit and its label sets.
	shape := func(m map[string][]metricSeries) map[string][]string {
		out := map[string][]string{}
		for name, ss := range m {
			for _, s := range ss {
				if s.Count == 0 {
					continue
				}
				out[name] = append(out[name], s.Unit+" "+s.Attrs)
			}
			slices.Sort(out[name])
		}
		return out
	}
	want := shape(theirs)
	for _, name := range []string{"grpc.lb.wrr.endpoint_weights", "grpc.lb.outlier_detection.ejections_enforced", "grpc.lb.outlier_detection.ejections_unenforced"} {
		if len(want[name]) == 0 {
			t.Errorf("grpc-go recorded no %s: %v", name, want)
		}
	}
	if ss := want["grpc.lb.wrr.endpoint_weights"]; len(ss) > 0 && !strings.Contains(strings.Join(ss, "\n"), `grpc.lb.locality={region="r2", zone="z2", sub_zone="s2"}`) {
		t.Errorf("grpc-go's endpoint_weights have no locality label: %v", ss)
	}
	for name, ss := range want {
		for _, s := range ss {
			t.Logf("%s %s", name, s)
		}
	}
	if diff := cmp.Diff(want, shape(ours)); diff != "" {
		t.Errorf("load-balancing metrics (-grpc-go +proxyless/xds):\n%s", diff)
	}
}
