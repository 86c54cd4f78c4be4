// SPDX-License-Identifier: Apache-2.0

package lrs

import (
	"slices"
	"sync"

	"github.com/proxyless/xds/resources"

	v3orcapb "github.com/cncf/xds/go/xds/data/orca/v3"
	v3endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// BackendMetrics selects the fields of the backends' ORCA load reports
// (gRFC A51) that a cluster's load reports carry (gRFC A64, A85), from
// the Cluster's lrs_report_endpoint_metrics. It is immutable; make one
// per cluster configuration with NewBackendMetrics.
type BackendMetrics struct {
	fields resources.BackendMetrics
	named  map[string]bool // with BackendMetricsNamed
}

// NewBackendMetrics returns the BackendMetrics of a Cluster's
// lrs_report_endpoint_metrics: fields is its LRSReportEndpointMetrics,
// named its LRSNamedMetrics() (the keys of "named_metrics.KEY"). It
// returns nil when they propagate nothing (the field unset, or naming no
// field gRPC knows): then ORCA reports are not looked at, as gRPC does
// since A85.
func NewBackendMetrics(fields resources.BackendMetrics, named []string) *BackendMetrics {
	if fields == 0 {
		return nil
	}
	m := &BackendMetrics{fields: fields}
	if keys := named; fields&resources.BackendMetricsNamed != 0 && len(keys) > 0 {
		m.named = make(map[string]bool, len(keys))
		for _, k := range keys {
			m.named[k] = true
		}
	}
	return m
}

// metricSum is the sum of the values of one metric and the number of RPCs
// that reported it, since the last report.
type metricSum struct {
	n   uint64
	sum float64
}

func (s *metricSum) add(v float64) {
	s.n++
	s.sum += v
}

func (s *metricSum) unnamed() *v3endpointpb.UnnamedEndpointLoadMetricStats {
	if s.n == 0 {
		return nil
	}
	return &v3endpointpb.UnnamedEndpointLoadMetricStats{NumRequestsFinishedWithMetric: s.n, TotalMetricValue: s.sum}
}

// backendLoad is the ORCA load a locality's backends reported since the
// last report.
type backendLoad struct {
	mu       sync.Mutex
	cpu      metricSum
	mem      metricSum
	app      metricSum
	named    map[string]*metricSum // by LRS metric name, "named_metrics.KEY"
	reported bool                  // something was added
}

// AddBackendMetrics records the ORCA load report r that the backend of an
// RPC to the locality sent with its response (gRFC A64: balancer.DoneInfo's
// ServerLoad), after Finish: the fields m selects are summed, and the
// next report of the locality carries, for each, the sum and the number of
// RPCs that reported it: cpu_utilization, mem_utilization and
// application_utilization in the UpstreamLocalityStats fields of those
// names, the named_metrics in load_metric_stats as
// "named_metrics.KEY" (gRFC A85). A nil r or m records nothing. It takes
// the locality's lock for ORCA data.
func (l *LocalityLoad) AddBackendMetrics(r *v3orcapb.OrcaLoadReport, m *BackendMetrics) {
	if r == nil || m == nil {
		return
	}
	b := &l.backend
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reported = true
	if m.fields&resources.BackendMetricsCPU != 0 {
		b.cpu.add(r.GetCpuUtilization())
	}
	if m.fields&resources.BackendMetricsMem != 0 {
		b.mem.add(r.GetMemUtilization())
	}
	if m.fields&resources.BackendMetricsApplication != 0 {
		b.app.add(r.GetApplicationUtilization())
	}
	if m.fields&(resources.BackendMetricsNamedAll|resources.BackendMetricsNamed) == 0 {
		return
	}
	for k, v := range r.GetNamedMetrics() {
		if m.fields&resources.BackendMetricsNamedAll == 0 && !m.named[k] {
			continue
		}
		if b.named == nil {
			b.named = make(map[string]*metricSum)
		}
		name := "named_metrics." + k
		s := b.named[name]
		if s == nil {
			s = new(metricSum)
			b.named[name] = s
		}
		s.add(v)
	}
}

// fill sets the ORCA fields of us from what was added since the last
// call, and starts a new period.
func (b *backendLoad) fill(us *v3endpointpb.UpstreamLocalityStats) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.reported {
		return
	}
	b.reported = false
	us.CpuUtilization, us.MemUtilization, us.ApplicationUtilization = b.cpu.unnamed(), b.mem.unnamed(), b.app.unnamed()
	b.cpu, b.mem, b.app = metricSum{}, metricSum{}, metricSum{}
	names := make([]string, 0, len(b.named))
	for n, s := range b.named {
		if s.n > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		s := b.named[n]
		us.LoadMetricStats = append(us.LoadMetricStats, &v3endpointpb.EndpointLoadMetricStats{MetricName: n, NumRequestsFinishedWithMetric: s.n, TotalMetricValue: s.sum})
		*s = metricSum{}
	}
}
