// SPDX-License-Identifier: Apache-2.0

package otelxds

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/proxyless/xds/calllabels"
)

// BenchmarkRelabel measures what the xDS labels add when an attempt ends:
// the three per-attempt records of grpc-go's plugin (the same attribute
// set each), through the plain SDK instruments, through the wrapped ones
// without labels (a channel not made with xdsresolver.DialOptions), and
// with labels.
func BenchmarkRelabel(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	set := attribute.NewSet(
		attribute.String("grpc.method", "grpc.testing.TestService/UnaryCall"),
		attribute.String("grpc.target", "xds:///svc"),
		attribute.String("grpc.status", "OK"),
		attribute.String(calllabels.KeyLocality, ""),
		attribute.String(calllabels.KeyBackendService, ""),
	)
	h := new(calllabels.Holder)
	h.Set(&calllabels.Labels{Locality: `{region="r1", zone="z1", sub_zone="s1"}`, BackendService: "cluster-a"})
	for _, tc := range []struct {
		name    string
		mp      metric.MeterProvider
		ctx     context.Context
		wrapped bool
	}{
		{"plain", mp, context.Background(), false},
		{"wrapped-no-labels", &meterProvider{MeterProvider: mp}, context.Background(), true},
		{"wrapped-labels", &meterProvider{MeterProvider: mp}, calllabels.NewContext(context.Background(), h), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := tc.mp.Meter("grpc-go")
			d, _ := m.Float64Histogram(metricAttemptDuration)
			s, _ := m.Int64Histogram(metricAttemptSent)
			r, _ := m.Int64Histogram(metricAttemptRcvd)
			b.ReportAllocs()
			for b.Loop() {
				opts := []metric.RecordOption{metric.WithAttributeSet(set)}
				d.Record(tc.ctx, 0.001, opts...)
				s.Record(tc.ctx, 100, opts...)
				r.Record(tc.ctx, 100, opts...)
			}
		})
	}
}
