// SPDX-License-Identifier: Apache-2.0

package lrs_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/lrs"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/transport"
	"github.com/proxyless/xds/transport/grpctransport"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// cluster decodes a Cluster whose lrs_report_endpoint_metrics is names.
func cluster(t *testing.T, names ...string) *resources.Cluster {
	t.Helper()
	pb := testutil.Cluster("c", "")
	pb.LrsReportEndpointMetrics = names
	a, err := anypb.New(pb)
	if err != nil {
		t.Fatal(err)
	}
	_, v, err := resources.ClusterType.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	return v.(*resources.Cluster)
}

// backendMetrics returns the BackendMetrics of a Cluster whose
// lrs_report_endpoint_metrics is names.
func backendMetrics(t *testing.T, names ...string) *lrs.BackendMetrics {
	c := cluster(t, names...)
	return lrs.NewBackendMetrics(c.LRSReportEndpointMetrics, c.LRSNamedMetrics())
}

// orcaRPCs records, in l, two RPCs whose backends sent ORCA reports and
// one that sent none.
func orcaRPCs(l *lrs.LocalityLoad, m *lrs.BackendMetrics) {
	for _, r := range []*v3orcapb.OrcaLoadReport{
		{CpuUtilization: 0.5, MemUtilization: 0.25, ApplicationUtilization: 0.75, NamedMetrics: map[string]float64{"foo": 1, "bar": 10}},
		{CpuUtilization: 0.25, MemUtilization: 0.5, NamedMetrics: map[string]float64{"foo": 2}},
		nil,
	} {
		l.Start()
		l.Finish(nil)
		l.AddBackendMetrics(r, m)
	}
}

// TestBackendMetrics checks the ORCA fields of the load reports for each
// lrs_report_endpoint_metrics (gRFC A64, A85): only what the Cluster
// selects, summed with the number of RPCs that reported it, top-level
// utilizations in their own fields and named metrics as
// "named_metrics.KEY" in load_metric_stats; nothing once reported.
func TestBackendMetrics(t *testing.T) {
	loc := &v3corepb.Locality{Region: "r", Zone: "z"}
	base := func() *v3endpointpb.UpstreamLocalityStats {
		return &v3endpointpb.UpstreamLocalityStats{Locality: loc, TotalIssuedRequests: 3, TotalSuccessfulRequests: 3}
	}
	cases := []struct {
		name  string
		names []string
		want  *v3endpointpb.UpstreamLocalityStats
	}{
		{name: "unset", want: base()},
		{name: "unknown only", names: []string{"rps"}, want: base()},
		{
			name:  "everything",
			names: []string{"cpu_utilization", "mem_utilization", "application_utilization", "named_metrics.*"},
			want: func() *v3endpointpb.UpstreamLocalityStats {
				us := base()
				us.CpuUtilization = &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75}
				us.MemUtilization = &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75}
				// The second report has no application_utilization: 0 counts.
				us.ApplicationUtilization = &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75}
				us.LoadMetricStats = []*v3endpointpb.EndpointLoadMetricStats{
					{MetricName: "named_metrics.bar", NumRequestsFinishedWithMetric: 1, TotalMetricValue: 10},
					{MetricName: "named_metrics.foo", NumRequestsFinishedWithMetric: 2, TotalMetricValue: 3},
				}
				return us
			}(),
		},
		{
			name:  "one named metric and cpu",
			names: []string{"named_metrics.foo", "cpu_utilization"},
			want: func() *v3endpointpb.UpstreamLocalityStats {
				us := base()
				us.CpuUtilization = &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75}
				us.LoadMetricStats = []*v3endpointpb.EndpointLoadMetricStats{
					{MetricName: "named_metrics.foo", NumRequestsFinishedWithMetric: 2, TotalMetricValue: 3},
				}
				return us
			}(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := backendMetrics(t, tc.names...)
			if (m == nil) != (tc.want.CpuUtilization == nil && tc.want.LoadMetricStats == nil) {
				t.Errorf("NewBackendMetrics(%q) = %v", tc.names, m)
			}
			store := lrs.NewStore()
			l := store.Cluster("c", "").Locality(resources.LocalityID{Region: "r", Zone: "z"})
			orcaRPCs(l, m)
			stats := store.Stats(nil)
			if len(stats) != 1 || len(stats[0].GetUpstreamLocalityStats()) != 1 {
				t.Fatalf("Stats() = %v, want one cluster with one locality", stats)
			}
			if diff := cmp.Diff(tc.want, stats[0].GetUpstreamLocalityStats()[0], protocmp.Transform()); diff != "" {
				t.Errorf("locality stats (-want +got):\n%s", diff)
			}
			// The next period starts empty.
			l.Start()
			l.Finish(nil)
			next := store.Stats(nil)[0].GetUpstreamLocalityStats()[0]
			if next.CpuUtilization != nil || next.MemUtilization != nil || next.ApplicationUtilization != nil || next.LoadMetricStats != nil {
				t.Errorf("next report carries ORCA data again: %v", next)
			}
		})
	}
}

// TestBackendMetrics_LRSServer checks that the ORCA figures reach an LRS
// server, per locality, on a real LRS stream.
func TestBackendMetrics_LRSServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	srv := testutil.NewLRSServer(t, testutil.LRSServerOptions{SendAllClusters: true, Interval: time.Second})
	tr, err := grpctransport.NewBuilder().Dial(&bootstrap.ServerConfig{ServerURI: srv.Address(), ChannelCreds: bootstrap.ChannelCreds{Type: bootstrap.CredsInsecure}}, transport.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	store := lrs.NewStore()
	m := backendMetrics(t, "cpu_utilization", "named_metrics.foo")
	cl := store.Cluster("c", "")
	orcaRPCs(cl.Locality(resources.LocalityID{Region: "r", Zone: "z1"}), m)
	z2 := cl.Locality(resources.LocalityID{Region: "r", Zone: "z2"})
	z2.Start()
	z2.Finish(nil)
	z2.AddBackendMetrics(&v3orcapb.OrcaLoadReport{CpuUtilization: 0.125, NamedMetrics: map[string]float64{"foo": 7, "bar": 1}}, m)

	c := lrs.NewClient(tr, &v3corepb.Node{Id: "n"}, store)
	defer c.Close()
	var got map[string]*v3endpointpb.UpstreamLocalityStats
	for got == nil {
		reqs, err := srv.WaitForRequests(ctx, len(srv.Requests())+1)
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range reqs[len(reqs)-1].GetClusterStats() {
			got = make(map[string]*v3endpointpb.UpstreamLocalityStats)
			for _, us := range cs.GetUpstreamLocalityStats() {
				got[us.GetLocality().GetZone()] = us
			}
		}
	}
	want := map[string]*v3endpointpb.UpstreamLocalityStats{
		"z1": {
			Locality: &v3corepb.Locality{Region: "r", Zone: "z1"}, TotalIssuedRequests: 3, TotalSuccessfulRequests: 3,
			CpuUtilization:  &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 2, TotalMetricValue: 0.75},
			LoadMetricStats: []*v3endpointpb.EndpointLoadMetricStats{{MetricName: "named_metrics.foo", NumRequestsFinishedWithMetric: 2, TotalMetricValue: 3}},
		},
		"z2": {
			Locality: &v3corepb.Locality{Region: "r", Zone: "z2"}, TotalIssuedRequests: 1, TotalSuccessfulRequests: 1,
			CpuUtilization:  &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: 1, TotalMetricValue: 0.125},
			LoadMetricStats: []*v3endpointpb.EndpointLoadMetricStats{{MetricName: "named_metrics.foo", NumRequestsFinishedWithMetric: 1, TotalMetricValue: 7}},
		},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("locality stats received (-want +got):\n%s", diff)
	}
}
