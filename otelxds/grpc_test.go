// SPDX-License-Identifier: Apache-2.0

package otelxds_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"

	"github.com/proxyless/xds/calllabels"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/testutil"
)

// series is one data point of a metric, as the comparisons see it: the
// instrument (scope, unit, description, kind, bucket bounds), the
// attributes, and what does not depend on timing (the count; the sum
// of a size histogram or a counter).
type series struct {
	Scope, Unit, Desc, Kind string
	Bounds                  []float64
	Attrs                   string
	Count                   uint64
	Sum                     float64
}

// snapshot collects reader and returns its data points by metric name,
// sorted by attributes.
func snapshot(t *testing.T, reader *sdkmetric.ManualReader) map[string][]series {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	out := make(map[string][]series)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			base := series{Scope: sm.Scope.Name + " " + sm.Scope.Version, Unit: m.Unit, Desc: m.Description}
			var ss []series
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					s := base
					s.Kind, s.Attrs, s.Count, s.Sum = "sum", attrString(dp.Attributes), 1, float64(dp.Value)
					ss = append(ss, s)
				}
			case metricdata.Histogram[float64]: // durations: their sums vary
				for _, dp := range d.DataPoints {
					s := base
					s.Kind, s.Bounds, s.Attrs, s.Count = "float64 histogram", dp.Bounds, attrString(dp.Attributes), dp.Count
					ss = append(ss, s)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					s := base
					s.Kind, s.Bounds, s.Attrs, s.Count, s.Sum = "int64 histogram", dp.Bounds, attrString(dp.Attributes), dp.Count, float64(dp.Sum)
					ss = append(ss, s)
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			out[m.Name] = append(out[m.Name], ss...)
		}
	}
	for _, ss := range out {
		slices.SortFunc(ss, func(a, b series) int { return strings.Compare(a.Attrs, b.Attrs) })
	}
	return out
}

// calls makes the same RPCs on cc every time: two UnaryCalls (OK), an
// EmptyCall and a stream (UNIMPLEMENTED by the backend), and one
// UnaryCall through cc.Invoke without grpc.StaticMethod (method
// "other").
func calls(ctx context.Context, t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	tc := testgrpc.NewTestServiceClient(cc)
	for range 2 {
		if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: make([]byte, 100)}}); err != nil {
			t.Fatalf("UnaryCall() = %v", err)
		}
	}
	if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("EmptyCall() = %v, want UNIMPLEMENTED", err)
	}
	s, err := tc.FullDuplexCall(ctx)
	if err != nil {
		t.Fatalf("FullDuplexCall() = %v", err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Unimplemented {
		t.Fatalf("FullDuplexCall Recv() = %v, want UNIMPLEMENTED", err)
	}
	if err := cc.Invoke(ctx, "/grpc.testing.TestService/UnaryCall", &testgrpc.SimpleRequest{}, new(testgrpc.SimpleResponse)); err != nil {
		t.Fatalf("Invoke() = %v", err)
	}
}

// labelsInterceptor gives each RPC a calllabels.Holder with l, as
// xdsresolver.DialOptions's interceptor and its picker do.
func labelsInterceptor(l *calllabels.Labels) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		h := new(calllabels.Holder)
		h.Set(l)
		return invoker(calllabels.NewContext(ctx, h), method, req, reply, cc, opts...)
	}
}

func labelsStreamInterceptor(l *calllabels.Labels) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		h := new(calllabels.Holder)
		h.Set(l)
		return streamer(calllabels.NewContext(ctx, h), desc, cc, method, opts...)
	}
}

// run makes calls on a channel to b with the metrics option dial, whose
// RPCs hold labels l (nil: none), and returns what was recorded.
func run(t *testing.T, b *testutil.Backend, l *calllabels.Labels, dial func(opentelemetry.Options) grpc.DialOption, optional ...string) map[string][]series {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		dial(opentelemetry.Options{MetricsOptions: opentelemetry.MetricsOptions{MeterProvider: mp, OptionalLabels: optional}}),
	}
	if l != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(labelsInterceptor(l)), grpc.WithChainStreamInterceptor(labelsStreamInterceptor(l)))
	}
	cc, err := grpc.NewClient(b.Address, opts...)
	if err != nil {
		t.Fatal(err)
	}
	calls(ctx, t, cc)
	cc.Close()
	return snapshot(t, reader)
}

// TestDialOption_SameAsGRPCPlugin checks that on a channel that gives no
// xDS labels DialOption records what grpc-go's plugin records for the
// same Options and RPCs: the same instruments (names, units,
// descriptions, kinds, buckets, meter), label sets and counts, with and
// without the optional labels.
func TestDialOption_SameAsGRPCPlugin(t *testing.T) {
	b, err := testutil.StartBackend(testutil.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	for _, optional := range [][]string{nil, {calllabels.KeyLocality, calllabels.KeyBackendService, "grpc.client.call.custom"}} {
		t.Run(fmt.Sprint(optional), func(t *testing.T) {
			want := run(t, b, nil, opentelemetry.DialOption, optional...)
			got := run(t, b, nil, otelxds.DialOption, optional...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("otelxds.DialOption recorded (-grpc-go's plugin +otelxds):\n%s", diff)
			}
			if len(want) != 5 {
				t.Errorf("grpc-go's plugin recorded %d metrics, want the 5 client metrics of gRFC A66", len(want))
			}
		})
	}
}

// TestDialOption_XDSLabels checks where the xDS labels of the RPCs go:
// on the three per-attempt instruments that grpc-go's xDS channel labels,
// with the Holder's values, only when OptionalLabels asks for them;
// grpc-go's plugin cannot see them and records "".
func TestDialOption_XDSLabels(t *testing.T) {
	b, err := testutil.StartBackend(testutil.BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	l := &calllabels.Labels{Locality: `{region="r1", zone="z1", sub_zone="s1"}`, BackendService: "cluster-a"}
	both := []string{calllabels.KeyLocality, calllabels.KeyBackendService}

	// Not asked for: no label, as with grpc-go's plugin.
	if diff := cmp.Diff(run(t, b, l, opentelemetry.DialOption), run(t, b, l, otelxds.DialOption)); diff != "" {
		t.Errorf("without OptionalLabels, otelxds.DialOption recorded (-grpc-go's plugin +otelxds):\n%s", diff)
	}

	for _, optional := range [][]string{both, {calllabels.KeyBackendService}} {
		t.Run(strings.Join(optional, ","), func(t *testing.T) {
			want := run(t, b, l, opentelemetry.DialOption, optional...)
			got := run(t, b, l, otelxds.DialOption, optional...)
			// grpc-go's plugin records "" for what it cannot see; with
			// otelxds the same series carry the Holder's labels.
			for _, name := range []string{"grpc.client.attempt.duration", "grpc.client.attempt.sent_total_compressed_message_size", "grpc.client.attempt.rcvd_total_compressed_message_size"} {
				for i := range want[name] {
					s := &want[name][i]
					s.Attrs = strings.Replace(s.Attrs, "grpc.lb.backend_service= ", "grpc.lb.backend_service=cluster-a ", 1)
					s.Attrs = strings.Replace(s.Attrs, "grpc.lb.locality= ", "grpc.lb.locality="+l.Locality+" ", 1)
				}
				if len(got[name]) == 0 || !strings.Contains(got[name][0].Attrs, "grpc.lb.backend_service=cluster-a") {
					t.Errorf("%s: no series with grpc.lb.backend_service=cluster-a", name)
				}
			}
			for _, name := range []string{"grpc.client.attempt.started", "grpc.client.call.duration"} {
				for _, s := range got[name] {
					if strings.Contains(s.Attrs, "grpc.lb.") {
						t.Errorf("%s has xDS labels: %s", name, s.Attrs)
					}
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("otelxds.DialOption recorded (-want +got):\n%s", diff)
			}
		})
	}
}
