// SPDX-License-Identifier: Apache-2.0

package otelxds_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/testutil/leakcheck"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

const defaultTestTimeout = 10 * time.Second

// point is one data point: its attributes, as a sorted "k=v" list, and value.
type point struct {
	Attrs string
	Value int64
}

// collect returns every int64 data point of reader by metric name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	out := make(map[string][]point)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelxds.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otelxds.ScopeName)
		}
		for _, m := range sm.Metrics {
			var dps []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if !d.IsMonotonic || d.Temporality != metricdata.CumulativeTemporality {
					t.Errorf("%s is not a cumulative monotonic sum: %+v", m.Name, d)
				}
				dps = d.DataPoints
			case metricdata.Gauge[int64]:
				dps = d.DataPoints
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
			for _, dp := range dps {
				out[m.Name] = append(out[m.Name], point{attrString(dp.Attributes), dp.Value})
			}
		}
	}
	return out
}

func attrString(s attribute.Set) string {
	var b []byte
	for i, kv := range s.ToSlice() { // sorted by key
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, string(kv.Key)+"="+kv.Value.AsString()...)
	}
	return string(b)
}

// newClient returns a client of ms reporting to rec.
func newClient(t *testing.T, ms *testutil.ManagementServer, rec client.MetricsRecorder, target string) *client.Client {
	t.Helper()
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.WithMetrics(rec), client.WithTarget(target))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// watch watches a cluster and returns a channel of what the watcher is told.
func watch(t *testing.T, c *client.Client, name string) <-chan error {
	t.Helper()
	ch := make(chan error, 100)
	t.Cleanup(client.Watch(c, resources.ClusterType, name, watcher.Funcs[*resources.Cluster]{
		OnChanged:       func(*resources.Cluster) { ch <- nil },
		OnResourceError: func(err error) { ch <- err },
		OnAmbientError:  func(err error) { ch <- err },
	}))
	return ch
}

// collectUntil collects until the metrics are want: the client records a
// response's or a stream's counters once it has handled it, on its own
// goroutine, so a watcher can see the event a moment before.
func collectUntil(ctx context.Context, t *testing.T, reader *sdkmetric.ManualReader, want map[string][]point, opt cmp.Option, format string) {
	t.Helper()
	for {
		diff := cmp.Diff(want, collect(t, reader), opt)
		if diff == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf(format, diff)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func wait(ctx context.Context, t *testing.T, ch <-chan error, target error) {
	t.Helper()
	select {
	case err := <-ch:
		if !errors.Is(err, target) {
			t.Fatalf("watcher got %v, want %v", err, target)
		}
	case <-ctx.Done():
		t.Fatal("timed out waiting for the watcher")
	}
}

// TestRecorder checks every instrument with OpenTelemetry's manual reader,
// over two clients of one Recorder against real gRPC management servers:
// one ACKs a valid cluster and NACKs an invalid one, the other's server
// rejects every stream. After Close, a client's gauges are no longer
// reported; its counters stay (cumulative).
func TestRecorder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), defaultTestTimeout)
	defer cancel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	rec, err := otelxds.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()

	good := testutil.NewManagementServer(t, testutil.ServerOptions{})
	invalid := testutil.Cluster("bad", "")
	invalid.ClusterDiscoveryType = &v3clusterpb.Cluster_Type{Type: v3clusterpb.Cluster_STATIC}
	good.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("ok", ""), invalid}})
	c1 := newClient(t, good, rec, "xds:///one")
	wait(ctx, t, watch(t, c1, "ok"), nil)
	wait(ctx, t, watch(t, c1, "bad"), client.ErrResourceInvalid)

	down := testutil.NewManagementServer(t, testutil.ServerOptions{})
	down.RejectStreams(errors.New("down"))
	c2 := newClient(t, down, rec, "xds:///two")
	wait(ctx, t, watch(t, c2, "x"), client.ErrConnection)

	const cds = "envoy.config.cluster.v3.Cluster"
	one := "grpc.target=xds:///one"
	two := "grpc.target=xds:///two"
	want := map[string][]point{
		// ok in the response to the first watch, and again in the one
		// to the second, with bad.
		otelxds.MetricResourceUpdatesValid:   {{"grpc.target=xds:///one grpc.xds.resource_type=" + cds + " grpc.xds.server=" + good.Address(), 2}},
		otelxds.MetricResourceUpdatesInvalid: {{"grpc.target=xds:///one grpc.xds.resource_type=" + cds + " grpc.xds.server=" + good.Address(), 1}},
		otelxds.MetricServerFailure:          {{two + " grpc.xds.server=" + down.Address(), 1}},
		otelxds.MetricConnected: {
			{one + " grpc.xds.server=" + good.Address(), 1},
			{two + " grpc.xds.server=" + down.Address(), 0},
		},
		otelxds.MetricResources: {
			{"grpc.target=xds:///one grpc.xds.authority=#old grpc.xds.cache_state=acked grpc.xds.resource_type=" + cds, 1},
			{"grpc.target=xds:///one grpc.xds.authority=#old grpc.xds.cache_state=nacked grpc.xds.resource_type=" + cds, 1},
			{"grpc.target=xds:///two grpc.xds.authority=#old grpc.xds.cache_state=requested grpc.xds.resource_type=" + cds, 1},
		},
	}
	sortPoints := cmp.Transformer("sort", func(ps []point) []point {
		return slices.SortedFunc(slices.Values(ps), func(a, b point) int { return strings.Compare(a.Attrs, b.Attrs) })
	})
	collectUntil(ctx, t, reader, want, sortPoints, "collected metrics (-want, +got):\n%s")

	// c2's gauges go with Close; the counters stay.
	c2.Close()
	want[otelxds.MetricConnected] = want[otelxds.MetricConnected][:1]
	want[otelxds.MetricResources] = want[otelxds.MetricResources][:2]
	collectUntil(ctx, t, reader, want, sortPoints, "collected metrics after one client's Close (-want, +got):\n%s")

	// Closing the Recorder stops the gauges altogether.
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	delete(want, otelxds.MetricConnected)
	delete(want, otelxds.MetricResources)
	collectUntil(ctx, t, reader, want, sortPoints, "collected metrics after the Recorder's Close (-want, +got):\n%s")
}

// TestNew_NilMeterProvider checks that New rejects a nil MeterProvider.
func TestNew_NilMeterProvider(t *testing.T) {
	if _, err := otelxds.New(nil); err == nil {
		t.Fatal("New(nil) succeeded, want an error")
	}
}
