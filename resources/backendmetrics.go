// SPDX-License-Identifier: Apache-2.0

package resources

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// BackendMetrics is the parsed form of a Cluster's
// lrs_report_endpoint_metrics (gRFC A85): which fields of the backends'
// ORCA load reports (gRFC A51) the cluster's load reports carry (gRFC
// A64). The zero value, for an unset field, propagates nothing.
type BackendMetrics uint8

// The fields lrs_report_endpoint_metrics names. Other strings are ignored,
// as A85 says for forward compatibility.
const (
	// BackendMetricsCPU is "cpu_utilization".
	BackendMetricsCPU BackendMetrics = 1 << iota
	// BackendMetricsMem is "mem_utilization".
	BackendMetricsMem
	// BackendMetricsApplication is "application_utilization".
	BackendMetricsApplication
	// BackendMetricsNamedAll is "named_metrics.*": every entry of the
	// report's named_metrics.
	BackendMetricsNamedAll
	// BackendMetricsNamed is set when "named_metrics.KEY" names some keys
	// (Cluster.LRSNamedMetrics), and not "named_metrics.*".
	BackendMetricsNamed
)

// lrsReportEndpointMetricsField is Cluster.lrs_report_endpoint_metrics.
const lrsReportEndpointMetricsField = protowire.Number(57)

const namedMetricsPrefix = "named_metrics."

// parseBackendMetrics returns the BackendMetrics of the strings of
// lrs_report_endpoint_metrics.
func parseBackendMetrics(names []string) BackendMetrics {
	var m BackendMetrics
	for _, n := range names {
		switch n {
		case "cpu_utilization":
			m |= BackendMetricsCPU
		case "mem_utilization":
			m |= BackendMetricsMem
		case "application_utilization":
			m |= BackendMetricsApplication
		case namedMetricsPrefix + "*":
			m |= BackendMetricsNamedAll
		default:
			if k, ok := strings.CutPrefix(n, namedMetricsPrefix); ok && k != "" {
				m |= BackendMetricsNamed
			}
		}
	}
	if m&BackendMetricsNamedAll != 0 {
		m &^= BackendMetricsNamed
	}
	return m
}

// LRSNamedMetrics returns the keys of named_metrics that
// lrs_report_endpoint_metrics names one by one ("named_metrics.KEY"), in
// the order received, when LRSReportEndpointMetrics has
// BackendMetricsNamed; nil otherwise, and for a Cluster not decoded from
// bytes. They are read from the resource's bytes on each call (the Cluster
// value stays within its size class): call it when the configuration
// changes, not per RPC.
func (c *Cluster) LRSNamedMetrics() []string {
	if c.LRSReportEndpointMetrics&BackendMetricsNamed == 0 {
		return nil
	}
	var keys []string
	it := wireIter{b: []byte(c.raw)}
	for it.next() {
		if !it.bytesField(lrsReportEndpointMetricsField) {
			continue
		}
		if k, ok := strings.CutPrefix(string(it.val), namedMetricsPrefix); ok && k != "" && k != "*" {
			keys = append(keys, k)
		}
	}
	return keys
}
