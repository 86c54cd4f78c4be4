// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// TestCluster_LRSReportEndpointMetrics checks the parsing of
// lrs_report_endpoint_metrics (gRFC A85): the three top-level fields,
// named_metrics.* over named keys, unknown strings ignored.
func TestCluster_LRSReportEndpointMetrics(t *testing.T) {
	cases := []struct {
		name      string
		give      []string
		want      BackendMetrics
		wantNamed []string
	}{
		{name: "unset"},
		{
			name:      "every kind",
			give:      []string{"cpu_utilization", "mem_utilization", "application_utilization", "named_metrics.foo", "unknown_field", "named_metrics.", "named_metrics.bar"},
			want:      BackendMetricsCPU | BackendMetricsMem | BackendMetricsApplication | BackendMetricsNamed,
			wantNamed: []string{"foo", "bar"},
		},
		{
			name: "named_metrics.* wins",
			give: []string{"named_metrics.foo", "named_metrics.*"},
			want: BackendMetricsNamedAll,
		},
		{name: "only unknown", give: []string{"utilization", "rps_fractional"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, v, err := ClusterType.Decode(mustAny(t, edsCluster("c", "", func(c *v3clusterpb.Cluster) {
				c.LrsReportEndpointMetrics = tc.give
			})))
			if err != nil {
				t.Fatal(err)
			}
			c := v.(*Cluster)
			if c.LRSReportEndpointMetrics != tc.want {
				t.Errorf("LRSReportEndpointMetrics = %05b, want %05b", c.LRSReportEndpointMetrics, tc.want)
			}
			if diff := cmp.Diff(tc.wantNamed, c.LRSNamedMetrics()); diff != "" {
				t.Errorf("LRSNamedMetrics() (-want +got):\n%s", diff)
			}
		})
	}
}
