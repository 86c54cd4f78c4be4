// SPDX-License-Identifier: Apache-2.0

package router

import (
	"slices"

	estats "google.golang.org/grpc/experimental/stats"

	"github.com/proxyless/xds/calllabels"
)

// The outlier detection counters of gRFC A91, with the descriptors of
// grpc-go's outlier_detection policy, so that grpc-go's plugin and
// otelxds record them alike. Registered with grpc's metrics registry by
// Register (xdsresolver.NewBuilder), never at init; when grpc-go's own xDS
// balancers are linked into the program, their registration of the same
// names is used instead.
var ejectionsEnforced, ejectionsUnenforced *estats.Int64CountHandle

func registerLBMetrics() {
	ejectionsEnforced = int64Count(estats.MetricDescriptor{
		Name:        "grpc.lb.outlier_detection.ejections_enforced",
		Description: "EXPERIMENTAL. Number of outlier ejections enforced by detection method",
		Unit:        "{ejection}",
		Labels:      []string{"grpc.target", "grpc.lb.outlier_detection.detection_method"},
	})
	ejectionsUnenforced = int64Count(estats.MetricDescriptor{
		Name:        "grpc.lb.outlier_detection.ejections_unenforced",
		Description: "EXPERIMENTAL. Number of unenforced outlier ejections due to either `max_ejection_percentage` or `enforcement_percentage`",
		Unit:        "{ejection}",
		Labels:      []string{"grpc.target", "grpc.lb.outlier_detection.detection_method", "grpc.lb.outlier_detection.unenforced_reason"},
	})
}

// int64Count returns the handle of the counter named d.Name, registering
// d unless a counter of that name is registered already.
func int64Count(d estats.MetricDescriptor) *estats.Int64CountHandle {
	if got := estats.DescriptorForMetric(d.Name); got != nil && got.Type == estats.MetricTypeIntCount {
		return (*estats.Int64CountHandle)(got)
	}
	return estats.RegisterInt64Count(d)
}

// labelRecorder is the metrics recorder of a child balancer: the
// channel's, with the optional labels grpc.lb.locality and
// grpc.lb.backend_service of the child's records filled in where the
// child leaves them "" (gRPC's weighted_round_robin reads them from
// attributes that gRPC's xDS tree sets through internal keys), with the
// values gRPC's xDS tree gives them: the locality of a child under a
// pick by locality weight, the leaf cluster.
type labelRecorder struct {
	estats.MetricsRecorder
	locality, backendService string
}

// fill returns labels with the xDS labels of d filled in; labels itself
// when there is nothing to fill.
func (r *labelRecorder) fill(d *estats.MetricDescriptor, labels []string) []string {
	out, copied := labels, false
	for i, k := range d.OptionalLabels {
		var v string
		switch k {
		case calllabels.KeyLocality:
			v = r.locality
		case calllabels.KeyBackendService:
			v = r.backendService
		default:
			continue
		}
		j := len(d.Labels) + i
		if v == "" || j >= len(labels) || labels[j] != "" {
			continue
		}
		if !copied {
			out, copied = slices.Clone(labels), true
		}
		out[j] = v
	}
	return out
}

func (r *labelRecorder) RecordInt64Count(h *estats.Int64CountHandle, v int64, labels ...string) {
	r.MetricsRecorder.RecordInt64Count(h, v, r.fill(h.Descriptor(), labels)...)
}

func (r *labelRecorder) RecordFloat64Count(h *estats.Float64CountHandle, v float64, labels ...string) {
	r.MetricsRecorder.RecordFloat64Count(h, v, r.fill(h.Descriptor(), labels)...)
}

func (r *labelRecorder) RecordInt64Histo(h *estats.Int64HistoHandle, v int64, labels ...string) {
	r.MetricsRecorder.RecordInt64Histo(h, v, r.fill(h.Descriptor(), labels)...)
}

func (r *labelRecorder) RecordFloat64Histo(h *estats.Float64HistoHandle, v float64, labels ...string) {
	r.MetricsRecorder.RecordFloat64Histo(h, v, r.fill(h.Descriptor(), labels)...)
}

func (r *labelRecorder) RecordInt64Gauge(h *estats.Int64GaugeHandle, v int64, labels ...string) {
	r.MetricsRecorder.RecordInt64Gauge(h, v, r.fill(h.Descriptor(), labels)...)
}

func (r *labelRecorder) RecordInt64UpDownCount(h *estats.Int64UpDownCountHandle, v int64, labels ...string) {
	r.MetricsRecorder.RecordInt64UpDownCount(h, v, r.fill(h.Descriptor(), labels)...)
}

// MetricsRecorder returns the channel's metrics recorder, filling the xDS
// labels of c's records.
func (c *child) MetricsRecorder() estats.MetricsRecorder {
	return &labelRecorder{MetricsRecorder: c.ClientConn.MetricsRecorder(), locality: c.locality, backendService: c.leaf}
}

// ejectionRecorder returns the dataplane.OutlierDetector.OnDecision of a
// channel: each decision counted on the channel's recorder with its
// target (gRFC A91). Without Register, nothing is counted.
func ejectionRecorder(recorder func() estats.MetricsRecorder, target string) func(method, reason string) {
	return func(method, reason string) {
		if ejectionsEnforced == nil {
			return
		}
		rec := recorder()
		if reason == "" {
			ejectionsEnforced.Record(rec, 1, target, method)
			return
		}
		ejectionsUnenforced.Record(rec, 1, target, method, reason)
	}
}
