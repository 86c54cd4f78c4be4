// SPDX-License-Identifier: Apache-2.0

package otelxds_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/proxyless/xds/bootstrap"
	"github.com/proxyless/xds/client"
	"github.com/proxyless/xds/otelxds"
	"github.com/proxyless/xds/resources"
	"github.com/proxyless/xds/testutil"
	"github.com/proxyless/xds/watcher"

	v3clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
)

// Example reports a client's metrics to an OpenTelemetry MeterProvider.
// Here a manual reader collects them once; a program gives the provider
// its exporter instead (a periodic reader with OTLP, or the Prometheus
// exporter go.opentelemetry.io/otel/exporters/prometheus).
func Example() {
	// A management server serving one cluster, for the example.
	ms, err := testutil.StartManagementServer(testutil.ServerOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ms.Stop()
	ms.Update("", testutil.Resources{Clusters: []*v3clusterpb.Cluster{testutil.Cluster("svc", "")}})
	cfg, err := bootstrap.Parse(ms.Bootstrap(testutil.BootstrapOptions{}))
	if err != nil {
		fmt.Println(err)
		return
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	rec, err := otelxds.New(mp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rec.Close()
	c, err := client.New(cfg, client.WithMetrics(rec), client.WithTarget("xds:///svc"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	got := make(chan struct{}, 1)
	defer client.Watch(c, resources.ClusterType, "svc", watcher.Funcs[*resources.Cluster]{
		OnChanged: func(*resources.Cluster) { got <- struct{}{} },
	})()
	<-got

	// The client records a response's counters once it has handled it,
	// on its own goroutine: the watcher may see the value a moment
	// before, so collect until the update is counted.
	var lines []string
	for range 500 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			fmt.Println(err)
			return
		}
		lines = lines[:0]
		counted := false
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				var dps []metricdata.DataPoint[int64]
				switch d := m.Data.(type) {
				case metricdata.Sum[int64]:
					dps = d.DataPoints
				case metricdata.Gauge[int64]:
					dps = d.DataPoints
				}
				for _, dp := range dps {
					state, _ := dp.Attributes.Value(otelxds.KeyCacheState)
					lines = append(lines, fmt.Sprintf("%s %s %d", m.Name, state.AsString(), dp.Value))
					counted = counted || m.Name == "grpc.xds_client.resource_updates_valid"
				}
			}
		}
		if counted {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// grpc.xds_client.connected  1
	// grpc.xds_client.resource_updates_valid  1
	// grpc.xds_client.resources acked 1
}
