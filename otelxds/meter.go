// SPDX-License-Identifier: Apache-2.0

package otelxds

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/proxyless/xds/calllabels"
)

// The per-attempt instruments that carry the xDS labels in gRPC (its
// OpenTelemetry plugin's processRPCEnd).
const (
	metricAttemptDuration = "grpc.client.attempt.duration"
	metricAttemptSent     = "grpc.client.attempt.sent_total_compressed_message_size"
	metricAttemptRcvd     = "grpc.client.attempt.rcvd_total_compressed_message_size"
)

// meterProvider wraps the MeterProvider given to grpc-go's plugin: its
// meters make the per-attempt instruments relabel.
type meterProvider struct {
	metric.MeterProvider
}

func (p *meterProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &meter{Meter: p.MeterProvider.Meter(name, opts...)}
}

// meter is a Meter whose per-attempt histograms relabel; every other
// instrument is the wrapped Meter's.
type meter struct {
	metric.Meter
}

func (m *meter) Float64Histogram(name string, opts ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	h, err := m.Meter.Float64Histogram(name, opts...)
	if err != nil || name != metricAttemptDuration {
		return h, err
	}
	return &float64Histogram{Float64Histogram: h}, nil
}

func (m *meter) Int64Histogram(name string, opts ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	h, err := m.Meter.Int64Histogram(name, opts...)
	if err != nil || (name != metricAttemptSent && name != metricAttemptRcvd) {
		return h, err
	}
	return &int64Histogram{Int64Histogram: h}, nil
}

type float64Histogram struct {
	metric.Float64Histogram
}

func (h *float64Histogram) Record(ctx context.Context, v float64, opts ...metric.RecordOption) {
	h.Float64Histogram.Record(ctx, v, relabel(ctx, opts)...)
}

type int64Histogram struct {
	metric.Int64Histogram
}

func (h *int64Histogram) Record(ctx context.Context, v int64, opts ...metric.RecordOption) {
	h.Int64Histogram.Record(ctx, v, relabel(ctx, opts)...)
}

// relabeledKey is an attribute set and the xDS labels put on it.
type relabeledKey struct {
	set                      attribute.Distinct
	locality, backendService string
}

// relabeled caches the attribute sets relabel makes: one per series (as
// many as the metrics' own series), so that the three records of an
// attempt, and the attempts of a series, build theirs once.
var relabeled sync.Map // relabeledKey → []metric.RecordOption, never modified

// relabel returns opts with the values of the xDS labels they have (the
// plugin records them, as "", when OptionalLabels asks for them) replaced
// by those of the attempt's calllabels.Holder. Labels not asked for are
// not added. Without labels to set, opts are returned as they are.
func relabel(ctx context.Context, opts []metric.RecordOption) []metric.RecordOption {
	l := calllabels.FromContext(ctx).Labels()
	if l == (calllabels.Labels{}) {
		return opts
	}
	set := metric.NewRecordConfig(opts).Attributes()
	k := relabeledKey{set.Equivalent(), l.Locality, l.BackendService}
	if v, ok := relabeled.Load(k); ok {
		return v.([]metric.RecordOption)
	}
	if !set.HasValue(calllabels.KeyLocality) && !set.HasValue(calllabels.KeyBackendService) {
		return opts
	}
	kvs := set.ToSlice()
	for i, kv := range kvs {
		switch kv.Key {
		case calllabels.KeyLocality:
			kvs[i].Value = attribute.StringValue(l.Locality)
		case calllabels.KeyBackendService:
			kvs[i].Value = attribute.StringValue(l.BackendService)
		}
	}
	out := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	relabeled.Store(k, out)
	return out
}
