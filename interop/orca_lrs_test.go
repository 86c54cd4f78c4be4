// SPDX-License-Identifier: Apache-2.0

package interop

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/orca"
	grpcxds "google.golang.org/grpc/xds"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/xdsresolver"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	v3listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	v3routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	v3lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
)

// orcaServer answers UnaryCall and EmptyCall with an ORCA report in its trailer (gRFC
// A51): its own CPU utilization, named metrics foo and bar.
type orcaServer struct {
	testgrpc.UnimplementedTestServiceServer
	cpu, foo float64
}

func (s *orcaServer) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	r := orca.CallMetricsRecorderFromContext(ctx)
	r.SetCPUUtilization(s.cpu)
	r.SetNamedMetric("foo", s.foo)
	r.SetNamedMetric("bar", 100)
	return &testgrpc.SimpleResponse{}, nil
}

func (s *orcaServer) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	_, err := s.UnaryCall(ctx, nil)
	return &testgrpc.Empty{}, err
}

// startORCAServer serves s, with per-call ORCA reports, on a new port of
// 127.0.0.1 until the test ends.
func startORCAServer(t *testing.T, s *orcaServer) uint32 {
	t.Helper()
	srv := grpc.NewServer(orca.CallMetricsServerOption(nil))
	testgrpc.RegisterTestServiceServer(srv, s)
	return serveOn(t, srv)
}

// serveOn serves srv on a new port of 127.0.0.1, which it returns, until
// the test ends.
func serveOn(t *testing.T, srv *grpc.Server) uint32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return uint32(lis.Addr().(*net.TCPAddr).Port)
}

// localityORCA is what the side-by-side comparison keeps of a locality's
// load reports, summed: RPCs succeeded, and per ORCA field the number of
// RPCs that reported it and the mean value.
type localityORCA struct {
	Succeeded          uint64
	CPUCount           uint64
	CPUMean            float64
	Named              map[string]uint64  // RPCs by load_metric_stats name
	NamedMean          map[string]float64 // mean by name
	Mem, Application   bool               // reported at all
	EndpointStats      bool
	cpuSum             float64
	namedSum           map[string]float64
	IssuedNotSucceeded int64
}

// sumORCA sums the reports of cluster in reqs, by zone.
func sumORCA(reqs []*v3lrspb.LoadStatsRequest, cluster string) map[string]*localityORCA {
	out := map[string]*localityORCA{}
	for _, r := range reqs {
		for _, cs := range r.GetClusterStats() {
			if cs.GetClusterName() != cluster {
				continue
			}
			for _, us := range cs.GetUpstreamLocalityStats() {
				z := us.GetLocality().GetZone()
				l := out[z]
				if l == nil {
					l = &localityORCA{Named: map[string]uint64{}, NamedMean: map[string]float64{}, namedSum: map[string]float64{}}
					out[z] = l
				}
				l.Succeeded += us.GetTotalSuccessfulRequests()
				l.IssuedNotSucceeded += int64(us.GetTotalIssuedRequests()) - int64(us.GetTotalSuccessfulRequests())
				l.CPUCount += us.GetCpuUtilization().GetNumRequestsFinishedWithMetric()
				l.cpuSum += us.GetCpuUtilization().GetTotalMetricValue()
				l.Mem = l.Mem || us.GetMemUtilization() != nil
				l.Application = l.Application || us.GetApplicationUtilization() != nil
				l.EndpointStats = l.EndpointStats || len(us.GetUpstreamEndpointStats()) > 0
				for _, m := range us.GetLoadMetricStats() {
					l.Named[m.GetMetricName()] += m.GetNumRequestsFinishedWithMetric()
					l.namedSum[m.GetMetricName()] += m.GetTotalMetricValue()
				}
			}
		}
	}
	for _, l := range out {
		if l.CPUCount > 0 {
			l.CPUMean = l.cpuSum / float64(l.CPUCount)
		}
		for n, c := range l.Named {
			l.NamedMean[n] = l.namedSum[n] / float64(c)
		}
	}
	return out
}

// TestORCAToLRS_SideBySide_GRPCGo checks ORCA propagation to LRS (gRFC
// A64, A85) against grpc-go's xDS channel: one cluster with lrs_server
// self and lrs_report_endpoint_metrics [cpu_utilization,
// named_metrics.foo], two localities, one backend each sending per-call
// ORCA reports (cpu 0.25 and foo 1 in z1, cpu 0.5 and foo 2 in z2, bar
// 100 in both); each channel reports to its own management server's LRS
// service. Both must report, per locality, every RPC with its
// cpu_utilization and named_metrics.foo (counts equal to the RPCs served
// there, means equal to the backend's figures), and no bar, memory,
// application utilization or per-endpoint stats.
func TestORCAToLRS_SideBySide_GRPCGo(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pa := startORCAServer(t, &orcaServer{cpu: 0.25, foo: 1})
	pb := startORCAServer(t, &orcaServer{cpu: 0.5, foo: 2})
	cluster := testutil.Cluster("cluster-a", "eds-a")
	cluster.LrsServer = &v3corepb.ConfigSource{ConfigSourceSpecifier: &v3corepb.ConfigSource_Self{Self: &v3corepb.SelfConfigSource{}}}
	cluster.LrsReportEndpointMetrics = []string{"cpu_utilization", "named_metrics.foo"}
	res := testutil.Resources{
		Listeners: []*v3listenerpb.Listener{testutil.Listener("svc", "route-svc")},
		Routes:    []*v3routepb.RouteConfiguration{testutil.RouteConfig("route-svc", "svc", "cluster-a")},
		Clusters:  []*v3clusterpb.Cluster{cluster},
		Endpoints: []*v3endpointpb.ClusterLoadAssignment{localityEndpoints("eds-a",
			[]*v3corepb.Locality{{Region: "r", Zone: "z1"}, {Region: "r", Zone: "z2"}}, pa, pb)},
	}
	const rpcs = 200
	run := func(name string, dial func(ms *testutil.ManagementServer) []grpc.DialOption) map[string]*localityORCA {
		lrsSrv := testutil.NewLRSServer(t, testutil.LRSServerOptions{SendAllClusters: true, Interval: time.Second})
		ms := testutil.NewManagementServer(t, testutil.ServerOptions{LoadReporting: lrsSrv})
		ms.Update("", res)
		cc, err := grpc.NewClient("xds:///svc", append(dial(ms), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close() // after the reports: grpc-go sends no final one
		tc := testgrpc.NewTestServiceClient(cc)
		for range rpcs {
			if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{}, grpc.WaitForReady(true)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for {
			reqs, err := lrsSrv.WaitForRequests(ctx, len(lrsSrv.Requests())+1)
			if err != nil {
				t.Fatalf("%s: %v (reports so far: %v)", name, err, lrsSrv.Requests())
			}
			got := sumORCA(reqs, "cluster-a")
			if total := got["z1"].ok() + got["z2"].ok(); total >= rpcs {
				return got
			}
		}
	}
	theirs := run("grpc-go", func(ms *testutil.ManagementServer) []grpc.DialOption {
		r, err := grpcxds.NewXDSResolverWithConfigForTesting(ms.Bootstrap(testutil.BootstrapOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		return []grpc.DialOption{grpc.WithResolvers(r)}
	})
	ours := run("proxyless/xds", func(ms *testutil.ManagementServer) []grpc.DialOption {
		cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return xdsresolver.DialOptions(c)
	})
	for name, got := range map[string]map[string]*localityORCA{"grpc-go": theirs, "proxyless/xds": ours} {
		for zone, want := range map[string]struct{ cpu, foo float64 }{"z1": {0.25, 1}, "z2": {0.5, 2}} {
			l := got[zone]
			if l == nil || l.Succeeded == 0 {
				t.Errorf("%s: no report for locality %s: %+v", name, zone, got)
				continue
			}
			w := &localityORCA{
				Succeeded: l.Succeeded, CPUCount: l.Succeeded, CPUMean: want.cpu,
				Named: map[string]uint64{"named_metrics.foo": l.Succeeded}, NamedMean: map[string]float64{"named_metrics.foo": want.foo},
			}
			if diff := cmp.Diff(w, l, cmp.AllowUnexported(localityORCA{}), cmp.FilterPath(func(p cmp.Path) bool {
				f := p.Last().String()
				return f == ".cpuSum" || f == ".namedSum"
			}, cmp.Ignore())); diff != "" {
				t.Errorf("%s: locality %s (-want +got):\n%s", name, zone, diff)
			}
		}
	}
	if a, b := fmt.Sprint(keys(theirs)), fmt.Sprint(keys(ours)); a != b {
		t.Errorf("localities reported: grpc-go %s, proxyless/xds %s", a, b)
	}
}

func (l *localityORCA) ok() uint64 {
	if l == nil {
		return 0
	}
	return l.Succeeded
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
